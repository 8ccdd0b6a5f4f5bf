"""Errors that reach the user as one clear line."""


class InputError(Exception):
    """Bad input found before any model call: options, query, namespace, store file, budgets.

    The CLI prints the message on one line and exits with status 2.
    """
