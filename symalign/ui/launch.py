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


def app_command(port: int = 8501, headless: bool = False, address: str = LOOPBACK) -> list[str]:
    """The server listens on the loopback address unless told otherwise: Streamlit's default is every
    interface, which would let anyone on the network link the host's directories, read its files as
    text data and delete runs (there is no guest mode yet to restrict a visitor)."""
    return [sys.executable, "-m", "streamlit", "run", str(app_script()), "--server.port", str(port),
            "--server.address", address,
            "--server.headless", "true" if headless else "false", "--browser.gatherUsageStats", "false",
            "--server.maxUploadSize", "512", "--server.fileWatcherType", "none",
            "--server.showEmailPrompt", "false"]
