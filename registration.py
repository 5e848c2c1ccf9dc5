"""Class registration for the extension (filled in by the Blender issues)."""


def register() -> None:
    pass


def unregister() -> None:
    pass
