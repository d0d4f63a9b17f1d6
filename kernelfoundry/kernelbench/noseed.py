"""The seed generator's refusal: the graph holds an op its templates cannot express."""


class NoSeed(Exception):
    """The graph holds an op the templates cannot express; the message names it."""
