"""Which panel chains an operator acts on (`ChainIKSettings.in_scope`), or why none."""

from __future__ import annotations


class NoChains(ValueError):
    """The armature has no panel chains and the caller named none. The message names the operator's
    arguments; a caller with other ways to name a chain (cli.py's --chain) words its own."""


def scoped_items(settings) -> list:
    """`in_scope`, or ValueError saying why there is nothing to act on."""
    items = settings.in_scope()
    if items:
        return items
    if not settings.chains:
        raise NoChains("no chains: add one in the Chain IK panel, or pass tip, chain_length and target")
    if settings.scope == "SELECTED" and not any(c.select for c in settings.chains):
        raise ValueError("no chain is selected (Act On: Selected Chains): tick chains in the list, or act on all")
    raise ValueError("every chain in scope is muted: unmute one in the list")


def check_not_muted(item) -> None:
    """A chain named explicitly (by index, or the active one with arguments) must not be muted."""
    if item.mute:
        raise ValueError(f"chain '{item.name}' is muted: unmute it in the list")
