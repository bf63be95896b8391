"""The files systemd reads, rendered from the templates in ``templates/``: units, env files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from boardd.config import DEFAULT_HOST, DEFAULT_PORT
from boardd.exitcodes import ExitCode

#: The unprivileged user of the shipped system units (see templates/boardd.sysusers.conf.in).
DEFAULT_SYSTEM_USER = "boardd"
#: ExecStart of the shipped units: where ``pip install`` (system) and pipx (user) put boardd.
SHIPPED_SYSTEM_BOARDD = "/usr/local/bin/boardd"
SHIPPED_USER_BOARDD = "%h/.local/bin/boardd"
#: Exit codes that restarting cannot fix: the units' RestartPreventExitStatus=.
NO_RESTART_EXIT_CODES = (ExitCode.USAGE, ExitCode.FINGERPRINT_MISMATCH)


def render(name: str, **values: object) -> str:
    """Template ``templates/<name>.in`` with its ``{key}`` fields filled from ``values``.

    The syntax is str.format_map's: ``{key}`` is a field, ``{{`` and ``}}`` are literal braces
    (systemd's own ``${VAR}`` is written ``${{VAR}}``). A field without a value raises KeyError;
    values the template does not use are ignored.
    """
    template = resources.files("boardd.systemd").joinpath("templates")
    for part in f"{name}.in".split("/"):
        template = template.joinpath(part)
    return template.read_text(encoding="utf-8").format_map(values)


def _shipped_name(*, template: bool, user: bool) -> str:
    # The unit's path under the repository's systemd/ and, with ".in", under templates/.
    name = "boardd@.service" if template else "boardd.service"
    return f"user/{name}" if user else name


def render_unit(
    *,
    template: bool,
    user: bool,
    boardd: str,
    run_as: str | None = DEFAULT_SYSTEM_USER,
    header: str = "",
) -> str:
    """The text of a boardd service unit.

    ``template`` selects the one-service-per-logdir template (the logdir is the instance name,
    ``%f``) over the single service configured by an environment file (``$BOARDD_LOGDIR``).
    ``user`` selects a ``systemctl --user`` unit. ``boardd`` is ExecStart's first word, already
    quoted (see boardd.systemd.escape.quote_exec_path). ``run_as`` is the system units'
    ``User=``. ``header``, a comment block, replaces the template's introduction (the comment
    lines before its first blank line).
    """
    text = render(
        _shipped_name(template=template, user=user),
        boardd=boardd,
        user=run_as or DEFAULT_SYSTEM_USER,
        default_host=DEFAULT_HOST,
        default_port=DEFAULT_PORT,
        exit_usage=int(ExitCode.USAGE),
        exit_fingerprint_mismatch=int(ExitCode.FINGERPRINT_MISMATCH),
        restart_prevent_exit_status=" ".join(str(int(code)) for code in NO_RESTART_EXIT_CODES),
    )
    if header:
        _, _, body = text.partition("\n\n")
        text = f"{header.rstrip()}\n\n{body}"
    return text


def render_env(*, port: int, logdir: Path, restart: str, host: str = DEFAULT_HOST) -> str:
    """A fresh per-instance environment file; ``restart`` is the command that applies it."""
    return render("instance.env", port=port, host=host, logdir=logdir, restart=restart)


def shipped_files() -> dict[str, str]:
    """The files of the repository's ``systemd/`` directory, by relative path, as rendered now.

    ``tools/gen_systemd_units.py`` writes them; a test checks that they are up to date.
    """
    files = {}
    for template in (True, False):
        for user in (False, True):
            boardd = SHIPPED_USER_BOARDD if user else SHIPPED_SYSTEM_BOARDD
            name = _shipped_name(template=template, user=user)
            files[name] = render_unit(template=template, user=user, boardd=boardd)
    files["boardd.env.example"] = render(
        "boardd.env.example", default_host=DEFAULT_HOST, default_port=DEFAULT_PORT
    )
    files["boardd.sysusers.conf"] = render("boardd.sysusers.conf", user=DEFAULT_SYSTEM_USER)
    return files
