"""Find the app next to the package and build the `streamlit run` command for `symalign app`."""

from __future__ import annotations

import sys
from pathlib import Path

from symalign.errors import SymalignError


def app_script() -> Path:
    """app.py at the project root (an editable install or a checkout keeps it there)."""
    script = Path(__file__).resolve().parents[2] / "app.py"
    if not script.is_file():
        raise SymalignError(f"the app is not next to the package ({script} missing); install symalign from a "
                            "checkout with `pip install -e .` to use `symalign app`")
    return script


LOOPBACK = "127.0.0.1"


def app_command(port: int = 8501, headless: bool = False, address: str = LOOPBACK,
                max_upload_mb: int = 512) -> list[str]:
    """The server listens on the loopback address unless told otherwise: Streamlit's default is every
    interface, which would give anyone on the network the host's rights (`--share` opens it with a
    guest mode instead; symalign.ui.access). No garbage collection after each script run (Streamlit's default):
    a job's panel reruns every second, and with torch loaded each full collection took 0.25 s of the server's CPU
    (benchmarks/following_cost.py); Python's own collector still runs."""
    return [sys.executable, "-m", "streamlit", "run", str(app_script()), "--server.port", str(port),
            "--server.address", address,
            "--server.headless", "true" if headless else "false", "--browser.gatherUsageStats", "false",
            "--server.maxUploadSize", str(max_upload_mb), "--server.fileWatcherType", "none",
            "--server.showEmailPrompt", "false", "--runner.postScriptGC", "false",
            "--client.toolbarMode", "minimal"]  # no Deploy button on a seminar's projector (issue #56)


# Streamlit's welcome off: since 1.6x it carries a nudge to install agent skills, a line in the terminal and, when
# an AI coding agent is found on the machine, a popup with an Install button on the app's page (seen on the Models
# page of a fresh install), which has no place on a projector. An environment variable, not a flag: a Streamlit
# without the option (added early in 2026) ignores it, where it would refuse the flag. `symalign app` prints the
# app's address itself.
QUIET_WELCOME = {"STREAMLIT_LOGGER_HIDE_WELCOME_MESSAGE": "true"}


def check_port_free(address: str, port: int) -> None:
    """Refuse a port another server holds, before the launcher says where the app is: Streamlit, told to take a
    busy port, logged "Port 8501 is not available" and exited, under our line naming that port as the app's.
    The probe binds as a server does (SO_REUSEADDR: a port left in TIME_WAIT by a stopped app is free)."""
    import errno
    import socket

    try:
        family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)[0][0]
    except OSError as exc:
        raise SymalignError(f"--address {address}: not an address of this machine ({exc.strerror or exc})") from None
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise SymalignError(f"port {port} on {address} is taken (another symalign app?): stop that server "
                                    "or choose another port with --port") from None
            raise SymalignError(f"cannot listen on {address}:{port}: {exc.strerror or exc}") from None


def app_urls(address: str, port: int) -> list[str]:
    """The URLs the app answers on; listening on every interface, this machine's own addresses, the ones to
    give a room (read locally, nothing is contacted)."""
    import socket

    if address not in ("0.0.0.0", "::"):
        return [f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"]  # IPv6 bracketed
    found: list[str] = []
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        infos = []
    for info in infos:
        ip = info[4][0]
        if not ip.startswith("127.") and ip not in found:
            found.append(ip)
    return [f"http://{ip}:{port}" for ip in found] or [f"http://<this machine's address>:{port}"]
