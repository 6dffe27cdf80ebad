"""The API's one error format, read back in the tests."""


def error(response) -> dict:
    """The ``error`` object of an error response (and nothing beside it)."""
    assert set(response.json()) == {"error"}
    return response.json()["error"]
