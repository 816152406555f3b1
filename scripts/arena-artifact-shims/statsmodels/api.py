from _anything import NOTHING

__all__ = []


def __getattr__(name):
    return NOTHING
