"""Shell completion: click's own (`_VAULTMEM_COMPLETE`), its script printed or installed.

`vaultmem --show-completion` prints the script for the shell `$SHELL` names (bash, zsh or
fish); `vaultmem --install-completion` writes it where that shell looks and, for bash and zsh,
adds the line that loads it to the shell's startup file (once).
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from click.shell_completion import get_completion_class

from vaultmem.core.errors import InvalidArgumentError

SHELLS = ("bash", "zsh", "fish")


def _shell() -> str:
    shell = Path(os.environ.get("SHELL", "")).name
    if shell not in SHELLS:
        raise InvalidArgumentError(
            f"Shell completion knows {', '.join(SHELLS)}, not {shell or 'an unnamed shell'}.",
            hint="Set SHELL to one of them, e.g. SHELL=/bin/bash vaultmem --show-completion.",
        )
    return shell


def show(command: click.Command, prog: str) -> str:
    """The completion script for the current shell."""
    complete_var = f"_{prog.replace('-', '_').upper()}_COMPLETE"
    completion = get_completion_class(_shell())
    assert completion is not None  # every name of SHELLS is one of click's
    return completion(command, {}, prog, complete_var).source()


def install(command: click.Command, prog: str) -> str:
    """Write the script where the shell finds it; what was done, as one sentence."""
    shell, script, home = _shell(), show(command, prog), Path.home()
    target = {
        "bash": home / ".bash_completions" / f"{prog}.sh",
        "zsh": home / ".zfunc" / f"_{prog}",
        "fish": home / ".config" / "fish" / "completions" / f"{prog}.fish",
    }[shell]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(script, encoding="utf-8")
    startup = {
        "bash": (home / ".bashrc", f"source {target}"),
        "zsh": (home / ".zshrc", "fpath+=~/.zfunc; autoload -Uz compinit; compinit"),
    }
    if shell in startup:
        rc, line = startup[shell]
        lines = rc.read_text(encoding="utf-8").splitlines() if rc.exists() else []
        if line not in lines:
            with rc.open("a", encoding="utf-8") as out:
                out.write(f"\n{line}\n")
    return f"{shell} completion installed in {target}; it works in a new shell."
