"""Where the team's commands (``submissions``, ``final``) find the server: ``--server``, or
``UPLOAD_URL`` without its upload path, the phase's included."""

from __future__ import annotations

import argparse

import pytest

from evaluation.cli.team import team_client

TOKEN = "t" * 43


@pytest.mark.parametrize("upload_url", [
    "https://board.example.org/api/v1/submissions",
    "https://board.example.org/api/v1/submissions/",
    "https://board.example.org/api/v1/phases/final/submissions",
    "https://board.example.org/api/v1/phases/public/submissions/",
])
def test_the_server_is_the_upload_url_without_its_upload_path(monkeypatch, tmp_path,
                                                              upload_url):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UPLOAD_URL", upload_url)
    monkeypatch.setenv("UPLOAD_TOKEN", TOKEN)
    client = team_client(argparse.Namespace(server=None, env_file=None), "a test")
    assert client.url == "https://board.example.org"


def test_a_given_server_wins(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UPLOAD_URL", "https://board.example.org/api/v1/phases/x/submissions")
    monkeypatch.setenv("UPLOAD_TOKEN", TOKEN)
    client = team_client(argparse.Namespace(server="https://other.example.org/", env_file=None),
                         "a test")
    assert client.url == "https://other.example.org"
