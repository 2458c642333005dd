# make demo: the async loop on a local AWS stack. make test: every test.
# Both set up what they need (a project-local .venv with moto, cargo-lambda and zig).

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
STACK := $(PY) scripts/local_stack.py --

.PHONY: help venv test unit-test demo serve fmt lint clean

help:
	@echo "make demo   run the async loop locally (inference outcomes, pipeline runs) and show what is stored"
	@echo "make test   run every test (unit tests, and integration tests against moto)"
	@echo "make serve  run everything locally and serve MCP at 127.0.0.1 until Ctrl-C"
	@echo "make lint   rustfmt and clippy"

venv:
	@bash scripts/bootstrap.sh

test: venv lint
	cargo build --locked --workspace --bins
	$(PY) scripts/local_stack.py --sagemaker target/debug/sagemaker-standin --step-millis 50 -- \
		scripts/cargo_test_summary.sh --workspace --all-targets --locked
	$(PY) scripts/local_stack.py --sagemaker target/debug/sagemaker-standin --step-millis 100 --lambda -- \
		$(PY) -m pytest -q tests/mcp

unit-test:
	cargo test --workspace --lib

demo: venv
	cargo build --locked --workspace --bins
	$(PY) scripts/local_stack.py --sagemaker target/debug/sagemaker-standin --standin-runtime --lambda -- \
		$(PY) scripts/demo.py

serve: venv
	cargo build --locked --workspace --bins
	$(PY) scripts/local_stack.py --sagemaker target/debug/sagemaker-standin --standin-runtime --lambda -- \
		$(PY) scripts/serve.py

fmt:
	cargo fmt --all

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings

clean:
	cargo clean
	rm -rf $(VENV) .local
