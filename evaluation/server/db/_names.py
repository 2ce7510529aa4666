"""The rules of a team's name (the contract's, which the reproduction worker relies on) and
of its email."""

from __future__ import annotations

from evaluation.contract import team_name_problem
from evaluation.errors import ConfigError
from evaluation.server.db._tables import MAX_EMAIL


def check_team_name(name: str) -> str:
    """Check a team name against the rule (``evaluation.contract.TEAM_NAME_RULE``): 1 to
    ``MAX_TEAM_NAME`` printable characters of any script, at most ``MAX_TEAM_NAME_BYTES``
    bytes as UTF-8, no path separator, no leading dot: what the reproduction worker can use
    as the team's folder of its checkouts.

    Returns
    -------
    str
        ``name`` unchanged (names are stored as given).

    Raises
    ------
    ConfigError
        When it is empty, too long, starts or ends with a space, starts with a dot, holds
        ``/`` or ``\\``, or a control, format or separator character (other than the ASCII
        space and the zero-width joiners); the message says the rule.
    """
    problem = team_name_problem(name)
    if problem is not None:
        raise ConfigError(problem)
    return name


def check_email(email: str) -> str:
    """Check an email address: ``local@domain``, printable, no spaces, at most 320 characters.

    Raises
    ------
    ConfigError
        When it is not such an address.
    """
    ok = (isinstance(email, str) and 3 <= len(email) <= MAX_EMAIL and email.count("@") == 1
          and all(ch.isprintable() and not ch.isspace() for ch in email))
    if ok:
        local, _, domain = email.partition("@")
        ok = bool(local) and bool(domain) and not domain.startswith(".") and "." in domain
    if not ok:
        shown = email[:80] if isinstance(email, str) else email
        raise ConfigError(f"email {shown!r} is not an address like name@example.org (one @, a "
                          f"domain with a dot, no spaces, at most {MAX_EMAIL} characters).")
    return email
