"""The fake IAM policy simulator (fake_iam.py) for every doctor run of the modules that import
these fixtures: started once per module, bound to 127.0.0.1, reached through
AWS_ENDPOINT_URL_IAM, stopped at the end. (Not a conftest.py: tests/mcp has one, and both would
be imported as the one module `conftest`.)"""

import os

import pytest

from fake_iam import FakeIam


@pytest.fixture(scope="module", autouse=True)
def fake_iam():
    with FakeIam() as fake:
        before = os.environ.get("AWS_ENDPOINT_URL_IAM")
        os.environ["AWS_ENDPOINT_URL_IAM"] = fake.url
        try:
            yield fake
        finally:
            if before is None:
                os.environ.pop("AWS_ENDPOINT_URL_IAM", None)
            else:
                os.environ["AWS_ENDPOINT_URL_IAM"] = before


@pytest.fixture
def iam(fake_iam):
    """The fake simulator, with nothing denied when the test starts and ends."""
    fake_iam.reset()
    yield fake_iam
    fake_iam.reset()
