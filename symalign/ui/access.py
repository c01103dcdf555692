"""Who may do what in the app: the host (the default, on the loopback address) or the guests of an
app shared with `symalign app --share`.

Threat model (docs/app.md): a guest is anyone on the network who can reach the server, with the
passphrase when one is set. A guest may use the models and data the host offers (the zoo, the
host's models and linked folders, named data sets) and their own uploads, run and queue analyses
within caps, and delete or cancel only what their own session started. A guest can never make
the server read a path of the host's choosing (no directory linking, no typed paths, no
`text:PATH` data), train unless the host allowed it, or fill the disk or the queue.

The policy travels from `symalign app` to the server in environment variables, because the CLI
becomes the Streamlit server (exec) and every page reads it per script run."""

from __future__ import annotations

import hashlib
import hmac
import os
import uuid
from dataclasses import dataclass

from symalign.errors import SymalignError

GUEST = "SYMALIGN_GUEST"  # "1": the app is shared; every visitor is a guest
TRAINING = "SYMALIGN_GUEST_TRAINING"  # "1": guests may train (--allow-training)
PASSWORD = "SYMALIGN_APP_PASSWORD_SHA256"  # the passphrase's SHA-256 (the passphrase itself is not kept)

NAMED_DATA = ("digits", "digits-flipped", "shakespeare", "shakespeare-upper", "shakespeare-mlm")
MiB = 1 << 20


@dataclass(frozen=True)
class Access:
    guest: bool = False
    allow_training: bool = False
    password_sha256: str | None = None
    upload_bytes_per_session: int = 64 * MiB
    upload_bytes_total: int = 1024 * MiB
    active_jobs_per_session: int = 2

    @classmethod
    def from_environment(cls) -> Access:
        return cls(guest=os.environ.get(GUEST) == "1", allow_training=os.environ.get(TRAINING) == "1",
                   password_sha256=os.environ.get(PASSWORD) or None)

    def environment(self) -> dict[str, str]:
        """The variables that carry this policy to the server process."""
        env = {GUEST: "1" if self.guest else "0", TRAINING: "1" if self.allow_training else "0"}
        if self.password_sha256:
            env[PASSWORD] = self.password_sha256
        return env

    def password_ok(self, attempt: str) -> bool:
        """Compared in constant time; True when no passphrase is set."""
        if not self.password_sha256:
            return True
        return hmac.compare_digest(digest(attempt), self.password_sha256)

    @property
    def can_train(self) -> bool:
        return not self.guest or self.allow_training

    def check_model(self, ref: str, offered: set[str]) -> None:
        """A guest may use the models the app offers (the host's list and their own uploads), never a
        path or hub id they typed: that would read whatever the host's user can read."""
        if self.guest and ref not in offered:
            raise SymalignError(f"guests of a shared app use the models it lists; {ref!r} is not one of them "
                                "(upload a model on the Models page to add your own)")

    def check_data(self, spec: str | None) -> None:
        """A guest names a shipped data set; `text:PATH` and the other path specs would read host files."""
        if self.guest and spec and spec not in NAMED_DATA:
            raise SymalignError(f"guests of a shared app use the named data sets ({', '.join(NAMED_DATA)}); "
                                f"{spec!r} names a path on the host")

    def check_training(self) -> None:
        if not self.can_train:
            raise SymalignError("training is off for guests of this shared app (the host can allow it with "
                                "`symalign app --share --allow-training`)")

    def check_upload(self, size: int, session_used: int, total_used: int) -> None:
        """Caps on what a guest may store: per session and for all guests together."""
        if not self.guest:
            return
        if session_used + size > self.upload_bytes_per_session:
            raise SymalignError(f"guests may upload {self.upload_bytes_per_session // MiB} MiB per session; "
                                "this upload "
                                f"({size / MiB:.1f} MiB) would bring yours to {(session_used + size) / MiB:.1f} MiB")
        if total_used + size > self.upload_bytes_total:
            raise SymalignError(f"the shared app's room for guests' uploads ({self.upload_bytes_total // MiB} MiB) is "
                                "full; ask the host")

    def check_queue(self, active: int) -> None:
        if self.guest and active >= self.active_jobs_per_session:
            raise SymalignError(f"guests may have {self.active_jobs_per_session} jobs queued or running at once; "
                                "wait for one to finish (see Jobs)")

    def may_change(self, owner: str, session: str) -> bool:
        """Delete a run or cancel a job: the host anything, a guest only what their session started."""
        return not self.guest or (bool(owner) and owner == session)


def digest(passphrase: str) -> str:
    return hashlib.sha256(passphrase.encode()).hexdigest()


def new_session_id() -> str:
    return uuid.uuid4().hex
