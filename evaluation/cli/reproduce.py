"""``python -m evaluation reproduce``: re-run a leaderboard submission from its checkout."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluation.cli._commands import command
from evaluation.errors import ConfigError

#: Exit statuses of this command: each means one thing (the harness's 2 and 3 keep theirs).
EXIT_REPRODUCED = 0
EXIT_NOT_REPRODUCED = 1
EXIT_BAD_ARGUMENTS = 2
EXIT_INFRASTRUCTURE = 3
EXIT_INTERNAL = 4
#: Where environments are kept with --keep-env, unless --env-cache says otherwise.
DEFAULT_ENV_CACHE = Path.home() / ".cache" / "evalrs" / "reproduce-envs"
#: Where --many writes its logs and report, unless --log-dir says otherwise.
DEFAULT_LOG_DIR = "reproduce-logs"
#: The options of one reproduction that --many does not take, and what it takes instead.
_SINGLE_ONLY = {"submission": "the CSV's submission column", "log": "--log-dir",
                "keep_env": "nothing (--many always keeps environments in --env-cache)",
                "competition": "a worker (`worker`), which runs the protocols its claims name"}
#: The options of --many that one reproduction does not take.
_MANY_ONLY = {"jobs": 1, "ray_num_cpus": 1.0, "log_dir": None, "report": None,
              "executor": "local"}

EXIT_HELP = """\
exit status:
  0    reproduced (the verdict was sent); with --many: every row reproduced
  1    not reproduced (the verdict was sent), or --private asked for and the private folds
       could not be evaluated; with --many: at least one row so, and none in error
  2    bad arguments or configuration (the message says what and how to fix it); with
       --many: any line of the CSV file (nothing is run then)
  3    the server refused a call or could not be reached, or no sandbox can be made on this
       machine (the message says how to enable one); with --many: at least one row could
       not be done (server, sandbox, environment build, harness error), the others were
  4    an internal error of the harness (its traceback is printed)

The participant's code runs only inside a bubblewrap sandbox (its own PID, user and network
namespaces, uid 65534, read-only environment and inputs, a size-limited scratch, budgets for
its whole process tree) and only trains and predicts: the predictions are validated and
scored here. Without bubblewrap the command refuses to run; --unsafe-no-sandbox runs the
model unconfined anyway, with a warning in the output and in the log sent to the server.

--competition FILE also runs the model under the alternative protocols the competition file
declares ([[robustness.protocols]]) once the submission reproduced, in the same sandbox with
the same budgets, as a worker does: each one's status, score and cost are printed, written to
the log and sent with the verdict; a protocol the model cannot run is a failed result with its
reason, never a failed reproduction.

--many FILE reproduces every line of a CSV file with the header
'submission,checkout[,private]' (checkout relative to the file's folder, or absolute; private
true/false/1/0/yes/no, empty: --private), each in its environment from --env-cache and under
its own limits, sends each verdict, prints a table and writes it as JSON (--report). Rows run
one after another (--jobs N: N at once) or, with --executor ray, one Ray task each (a local
Ray, or the cluster of RAY_ADDRESS).
"""


def register(subparsers) -> None:
    """Add the ``reproduce`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "reproduce",
        help="re-run a submission from the participant's checkout and send the verdict "
             "(organizers)",
        description="Fetch submission ID's upload from the leaderboard, evaluate the "
                    "checkout's submission/MyModel.py in an isolated virtual environment (its "
                    "requirements.txt plus this harness) under a wall-clock and a memory "
                    "limit, compare the per-fold tests and the model fingerprint with the "
                    "upload, print the table and send the verdict (with the log's end) to the "
                    "server.",
        epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("checkout", metavar="CHECKOUT", nargs="?",
                   help="the participant's repository (with submission/MyModel.py)")
    p.add_argument("--submission", type=int, metavar="ID",
                   help="the submission's id on the leaderboard (with CHECKOUT)")
    p.add_argument("--many", metavar="CSV",
                   help="reproduce every line of this CSV file (submission,checkout[,private]) "
                        "instead of one CHECKOUT")
    add_server_options(p)
    p.add_argument("--private", action="store_true",
                   help="also evaluate the model on the private seed's folds and send the "
                        "private score (needs --private-seed-file)")
    add_run_options(p)
    p.add_argument("--competition", metavar="FILE",
                   help="also run the model under the alternative protocols this competition "
                        "file declares ([[robustness.protocols]]), as a worker does, when the "
                        "submission reproduced; prints and sends each one's status, score "
                        "and cost")
    p.add_argument("--keep-env", action="store_true",
                   help="keep the environment built in the cache (--env-cache) and reuse it "
                        "for checkouts with the same requirements, harness and Python")
    p.add_argument("--log", metavar="FILE",
                   help="the evaluation's log (default: reproduce-ID.log in this folder)")
    many = p.add_argument_group("with --many")
    add_executor_options(many, "row")
    many.add_argument("--report", metavar="FILE", default=None,
                      help="the table as JSON (default: reproduce-many.json in --log-dir)")
    p.set_defaults(func=command("_reproduce_run", "run"))


def add_server_options(p: argparse.ArgumentParser) -> None:
    """The leaderboard and the organizer's token (``reproduce`` and ``worker``)."""
    p.add_argument("--server", required=True, metavar="URL",
                   help="the leaderboard's address, e.g. http://127.0.0.1:8000")
    p.add_argument("--admin-token-file", required=True, metavar="FILE",
                   help="file holding an organizer token (`admin token create`); never printed")


def add_run_options(p: argparse.ArgumentParser) -> None:
    """How each reproduction runs: the private seed, the budgets, the sandbox, the
    environment and the data (``reproduce`` and ``worker``)."""
    p.add_argument("--private-seed-file", metavar="FILE",
                   help="file holding the private fold seed (an integer; never printed or sent)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="wall-clock limit of each evaluation, in seconds (default: 3600)")
    p.add_argument("--memory-mb", type=int, default=None, metavar="M",
                   help="address-space limit of the evaluation, in MiB (default: 8192; 0: none)")
    p.add_argument("--processes", type=int, default=None, metavar="N",
                   help="processes the sandboxed model may run at once (default: 512)")
    p.add_argument("--scratch-mb", type=int, default=None, metavar="M",
                   help="MiB of the sandbox's scratch folder, its only writable place "
                        "(default: 4096)")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="where no sandbox can be made, run the participant's code unconfined "
                        "(with a warning in the output and in the verdict's log); never for "
                        "an official reproduction")
    p.add_argument("--index-url", metavar="URL", default=None,
                   help="the organizer's package index environments are built from (default: "
                        "uv's, i.e. PyPI); a participant's requirements.txt can never name one")
    p.add_argument("--allow-sdists", action="store_true",
                   help="let environments take packages that have no wheel, only a source "
                        "distribution: their metadata is read without building, they are "
                        "downloaded here and built inside the sandbox, without network "
                        "(default: wheels only; such a package is refused, naming it)")
    p.add_argument("--env", metavar="PATH",
                   help="a prepared virtual environment (with the harness installed) instead "
                        "of building one")
    p.add_argument("--env-cache", metavar="DIR", default=None,
                   help=f"where --keep-env keeps environments (default: {DEFAULT_ENV_CACHE})")
    p.add_argument("--source", metavar="SOURCE",
                   help="the dataset to rebuild, when not the upload's dataset.source (e.g. the "
                        "local path of the LFM data)")


def add_executor_options(group, unit: str) -> None:
    """Where many reproductions run, one ``unit`` (a row, a job) each (``reproduce --many``
    and ``worker``)."""
    group.add_argument("--executor", choices=("local", "ray"), default="local",
                       help=f"local: in this process; ray: one Ray task per {unit} (default: "
                            f"local)")
    group.add_argument("--jobs", type=int, default=1, metavar="N",
                       help=f"with --executor local, {unit}s run at once (default: 1)")
    group.add_argument("--ray-num-cpus", type=float, default=1.0, metavar="N",
                       help=f"with --executor ray, the CPUs each {unit}'s task asks for "
                            f"(default: 1)")
    group.add_argument("--log-dir", metavar="DIR", default=None,
                       help="where each reproduction's log reproduce-ID.log goes (default: "
                            f"{DEFAULT_LOG_DIR} in this folder)")


def check_executor(args: argparse.Namespace) -> None:
    """Check --jobs, --executor and --ray-num-cpus together."""
    if args.jobs < 1:
        raise ConfigError(f"--jobs {args.jobs}: give at least 1.")
    if args.executor != "local" and args.jobs != 1:
        raise ConfigError(f"--jobs goes with --executor local; with --executor {args.executor} "
                          f"the cluster's CPUs decide (--ray-num-cpus per row).")
    if not args.ray_num_cpus > 0:
        raise ConfigError(f"--ray-num-cpus {args.ray_num_cpus}: give a positive number.")
