# make demo: the async loop on a local AWS stack. make test: every test.
# Both set up what they need (a project-local .venv with moto, cargo-lambda and zig).

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
STACK := $(PY) scripts/local_stack.py --

.PHONY: help venv test unit-test demo serve fmt lint lint-infra build build-sam deploy clean

help:
	@echo "make demo   run the async loop locally (inference outcomes, pipeline runs) and show what is stored"
	@echo "make test   run every test (unit tests, and integration tests against moto)"
	@echo "make serve  run everything locally and serve MCP at 127.0.0.1 until Ctrl-C"
	@echo "make lint   rustfmt and clippy"
	@echo "make build  release binaries for Lambda (arm64) in target/lambda/"
	@echo "make lint-infra  cfn-lint and sam validate --lint on infra/template.yaml (offline)"
	@echo "make deploy sam build + sam deploy --guided (needs AWS credentials)"

venv:
	@bash scripts/bootstrap.sh

test: venv lint lint-infra
	cargo build --locked --workspace --bins
	$(PY) scripts/local_stack.py --sagemaker target/debug/sagemaker-standin --step-millis 50 -- \
		scripts/cargo_test_summary.sh --workspace --all-targets --locked
	$(PY) scripts/local_stack.py --sagemaker target/debug/sagemaker-standin --step-millis 100 --lambda -- \
		$(PY) -m pytest -q tests/mcp tests/infra

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

ARM64 := aarch64-unknown-linux-gnu
SAM := SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-us-east-1} $(VENV)/bin/sam

rust-target:
	@rustup target list --installed 2>/dev/null | grep -qx $(ARM64) || rustup target add $(ARM64) || { \
		echo "error: the Rust target $(ARM64) is missing and could not be added; run: rustup target add $(ARM64)" >&2; exit 1; }

build: venv rust-target
	cargo lambda build --release --arm64 --locked -p notification-handler -p pipeline-router -p mcp-tools

lint-infra: venv
	$(VENV)/bin/cfn-lint infra/template.yaml
	$(SAM) validate --lint --config-file samconfig.toml

# sam build runs cargo lambda build --release --arm64 for each function, offline. Not part of
# `make test`: a cold release build of the SageMaker SDK alone takes longer than CI's budget.
build-sam: venv rust-target
	$(SAM) build --config-file samconfig.toml

deploy: build-sam
	$(SAM) deploy --guided --config-file samconfig.toml

clean:
	cargo clean
	rm -rf $(VENV) .local
