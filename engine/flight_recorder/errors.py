"""The errors of reading Flight Recorder dumps; each message names the file."""


class DumpError(ValueError):
    """A dump that cannot be read: malformed, truncated, too large, too deep, or of an unsupported version."""


class PickleRefused(DumpError):
    """A pickle that asks for more than plain data (a global, a call, an object, a persistent id...)."""
