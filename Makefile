# make demo: the async loop on a local AWS stack. make test: every test.
# Both set up what they need (a project-local .venv with moto, cargo-lambda and zig).

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Where cargo builds (CARGO_TARGET_DIR when set): the SageMaker stand-in and check-catalog are
# run from there.
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
STANDIN := $(TARGET_DIR)/debug/sagemaker-standin
# The official MCP Inspector, pinned, for the tests that drive the server through its CLI.
INSPECTOR := tests/inspector/node_modules/.bin/mcp-inspector
# The official MCP conformance suite, pinned (scripts/conformance.py runs it).
CONFORMANCE := tests/conformance/node_modules/.bin/conformance

.PHONY: help venv test compile unit-test demo serve conformance bench bench-cost bench-hostile fmt lint lint-infra build build-sam sam-template sam-build-debug deploy \
	deploy-guided preflight-deploy preflight-cdk destroy cdk-destroy catalog redrive doctor wire-endpoint tool-schema cdk-test cdk-unit cdk-synth cdk-bootstrap cdk-deploy clean

help:
	@echo "make demo   run the async loop locally (inference outcomes, pipeline runs) and show what is stored"
	@echo "make test   lint, sam build (debug), then every test (unit, integration against moto, MCP, template)"
	@echo "make serve  run everything locally and serve MCP at 127.0.0.1 until Ctrl-C; AUTH=bearer (a token"
	@echo "             made up and printed once) or AUTH=oauth (with a local dev authorization server); default none;"
	@echo "             CATALOG=<file> serves your tool catalog (checked first, its tools printed); APPROVALS=1: the"
	@echo "             training pipeline asks a person (a CallbackStep, then the model's approval; who answers printed)"
	@echo "make conformance  the official MCP conformance suite (every server scenario) against mcp-tools"
	@echo "make bench  release builds against a Python/boto3 reference on the local stack; writes BENCHMARKS.md"
	@echo "make bench-cost  what a job costs, by AWS service (BENCHMARKS.md's cost section alone, a minute)"
	@echo "make bench-hostile  what hostile requests cost mcp-tools beside cheap ones (that section alone, a minute)"
	@echo "make lint   rustfmt and clippy"
	@echo "make build  release binaries for Lambda (arm64) in target/lambda/"
	@echo "make tool-schema  write the AgentCore Gateway target's tool schema (infra/gateway-tool-schema.json, template)"
	@echo "make lint-infra  cfn-lint and sam validate --lint on infra/template.yaml (offline)"
	@echo "make build-sam  sam build (release, arm64) into .aws-sam/"
	@echo "make deploy-guided  first deployment: 8 questions (stack name, then what a first deploy decides), each"
	@echo "             answer checked; saves them in samconfig.toml, then sam build + sam deploy in your AWS region with"
	@echo "             no further question (QUESTIONS=all: SAM's own guided deploy, every parameter, after the build)"
	@echo "make deploy         redeploy without questions, from samconfig.toml (PARAMS=\"Name=Value ...\": more parameters)"
	@echo "             (both check the region, stack, parameters and catalog first, in seconds, before building)"
	@echo "make destroy STACK=<name>  delete a stack (SAM's or the CDK's) and the objects it left in the IO bucket;"
	@echo "             names the tables it keeps (ARGS=--delete-tables deletes them; ARGS=--dry-run: the plan only)"
	@echo "make catalog CATALOG=<file> [MODELS=\"endpoint=model ...\"]  check a tool catalog (your models as tools), put"
	@echo "             it in the layer both deploys ship and print the parameters they pass with it (CATALOG=none:"
	@echo "             deploys serve no catalog); MODELS: the catalog's endpoints the stack creates, from their Models"
	@echo "             (every deploy, doctor, wire-endpoint, redrive and cdk command uses your region:"
	@echo "             AWS_REGION, else AWS_DEFAULT_REGION, else your profile's; samconfig.toml's is not used)"
	@echo "make doctor STACK=<name>  check a deployed stack's wiring (endpoint, topics, S3 paths, pipeline, rule, DLQs,"
	@echo "             alarms) and simulate its roles' permissions (the endpoint's execution role, each function's)"
	@echo "make wire-endpoint STACK=<name>  wire an existing endpoint to the stack (new EndpointConfig + UpdateEndpoint;"
	@echo "             ARGS=--dry-run prints the difference only) and print its execution role's policy"
	@echo "             (ATTACH_ROLE_POLICY=1 attaches it)"
	@echo "make cdk-test   the CDK construct's checks (tsc, node --test, parity with the SAM template, cfn-lint)"
	@echo "make cdk-synth PARAMS=\"AsyncEndpointName=... PipelineName=... IoBucketName=...\"  synthesize the CDK app"
	@echo "             (the template's parameters, Name=Value; STACK=<name>; offline) into infra/cdk/cdk.out/"
	@echo "make cdk-deploy PARAMS=... [STACK=<name>]  check PARAMS (as make deploy checks), make build, then cdk deploy"
	@echo "             in your AWS account and region"
	@echo "             (once per account and region first: make cdk-bootstrap)"
	@echo "make redrive STACK=<name>  replay a deployed stack's dead-lettered notifications and pipeline events"
	@echo "             (or QUEUE_URL=... NOTIFICATION_HANDLER=... PIPELINE_ROUTER=...; ARGS=\"--dry-run --max N\");"
	@echo "             ARGS=--event-deliveries: move MCP Events' dead-lettered webhook deliveries back to their queue"

venv:
	@bash scripts/bootstrap.sh

# Lint and build in two lanes at once (scripts/build_for_tests.sh): `compile` for this machine,
# `sam-build-debug` (which also sets up .venv) through SAM for Lambda; then run the tests on an
# otherwise idle machine.
# Each step says how long it took (scripts/timed.sh): where a clean clone's half hour goes.
test:
	@scripts/timed.sh "node packages, the CDK build and its unit tests" \
		$(MAKE) --no-print-directory $(INSPECTOR) $(CONFORMANCE) cdk-unit
	@scripts/timed.sh "lint and build (both lanes)" scripts/build_for_tests.sh
	@scripts/timed.sh "Rust tests" $(PY) scripts/local_stack.py --sagemaker $(STANDIN) --step-millis 50 -- \
		scripts/cargo_test_summary.sh --workspace --all-targets --locked
	@scripts/timed.sh "Python tests (tests/mcp, tests/infra, tests/bench)" \
		$(PY) scripts/local_stack.py --sagemaker $(STANDIN) --step-millis 100 --lambda -- \
		$(PY) -m pytest -q --durations=10 tests/mcp tests/infra tests/bench

$(INSPECTOR): tests/inspector/package.json tests/inspector/package-lock.json
	@command -v npm >/dev/null || { echo "error: npm is missing (Node.js 20 or newer): the MCP Inspector tests need it" >&2; exit 1; }
	npm ci --prefix tests/inspector --no-audit --no-fund --loglevel=error
	@touch $@

$(CONFORMANCE): tests/conformance/package.json tests/conformance/package-lock.json
	@command -v npm >/dev/null || { echo "error: npm is missing (Node.js 20 or newer): the conformance suite needs it" >&2; exit 1; }
	npm ci --prefix tests/conformance --no-audit --no-fund --loglevel=error
	@touch $@

# The CDK construct (infra/cdk): its packages, pinned; the build (tsc, which type-checks); its own
# tests (node --test, aws-cdk-lib/assertions, offline). tests/infra/test_cdk_parity.py (in make
# test's pytest run, or make cdk-test) then holds what it synthesizes to the SAM template and
# runs cfn-lint on it.
CDK_DIR := infra/cdk
CDK_MODULES := $(CDK_DIR)/node_modules/.installed
CDK_BUILT := $(CDK_DIR)/dist/.built
CDK_SOURCES := $(CDK_DIR)/tsconfig.json $(wildcard $(CDK_DIR)/lib/*.ts $(CDK_DIR)/bin/*.ts $(CDK_DIR)/test/*.ts)
CDK_CLI := CDK_DISABLE_CLI_TELEMETRY=true node_modules/.bin/cdk
# PARAMS: the template's parameters as Name=Value words (as sam deploy --parameter-overrides takes
# them), given to the app as context; STACK: the stack's name (default mcp-async-jobs).
CDK_CONTEXT = $(foreach p,$(PARAMS),-c '$(p)') $(if $(STACK),-c 'stackName=$(STACK)')

$(CDK_MODULES): $(CDK_DIR)/package.json $(CDK_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "error: npm is missing (Node.js 20 or newer): the CDK construct's checks need it" >&2; exit 1; }
	npm ci --prefix $(CDK_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

$(CDK_BUILT): $(CDK_MODULES) $(CDK_SOURCES)
	npm --prefix $(CDK_DIR) run --silent build
	@touch $@

cdk-unit: $(CDK_BUILT)
	npm --prefix $(CDK_DIR) test --silent

cdk-test: cdk-unit venv
	$(PY) -m pytest -q tests/infra/test_cdk_parity.py

cdk-synth: $(CDK_BUILT)
	cd $(CDK_DIR) && $(CDK_CLI) synth --no-notices --no-lookups --quiet $(CDK_CONTEXT) $(ARGS)
	@echo "synthesized into $(CDK_DIR)/cdk.out/ ($${STACK:-mcp-async-jobs}.template.json)"

# The CDK toolkit stack (its asset bucket and deploy roles), once per account and region. Run
# outside infra/cdk, so that the CLI bootstraps the credentials' account without synthesizing the app.
cdk-bootstrap: venv $(CDK_MODULES)
	@region=$$($(PY) scripts/aws_region.py) && echo "Bootstrapping CDK in $$region" && \
		AWS_REGION="$$region" CDK_DISABLE_CLI_TELEMETRY=true $(CDK_DIR)/node_modules/.bin/cdk bootstrap --no-notices \
		"aws://unknown-account/$$region" $(ARGS)

# The release build (make build) into the caller's account and region, which the stack (no env)
# takes from the credentials; the region as every deploy here picks it (scripts/aws_region.py).
# Checked first, as make deploy is (scripts/preflight.py cdk), before the twenty-minute build.
preflight-cdk: venv
	@$(PY) scripts/preflight.py cdk --params '$(PARAMS)' $(if $(STACK),--stack-name '$(STACK)')

cdk-deploy: preflight-cdk $(CDK_BUILT)
	@$(MAKE) --no-print-directory build
	@region=$$($(PY) scripts/aws_region.py) && echo "Deploying to $$region" && \
		cd $(CDK_DIR) && AWS_REGION="$$region" $(CDK_CLI) deploy --no-notices --no-lookups $(CDK_CONTEXT) $(ARGS)

compile: lint
	cargo build --locked --workspace --bins
	cargo test --locked --workspace --all-targets --no-run

unit-test:
	cargo test --workspace --lib

demo: venv
	cargo build --locked --workspace --bins
	$(PY) scripts/local_stack.py --sagemaker $(STANDIN) --standin-runtime --lambda -- \
		$(PY) scripts/demo.py

# AUTH=none|bearer|oauth: how mcp-tools authenticates (scripts/serve.py); oauth also starts the
# development authorization server (dev/oauth/authorization_server.py). CATALOG=<file>: serve
# that tool catalog (checked first; its tools are printed). APPROVALS=1: trigger_training's
# pipeline asks a person (dev/pipelines/approval.json, APPROVAL_GATE, APPROVERS; docs/approvals.md).
AUTH ?= none
serve: venv
	@case '$(APPROVALS)' in ''|0|1) ;; *) echo "error: APPROVALS='$(APPROVALS)': give APPROVALS=1, or leave it out" >&2; exit 2;; esac
	cargo build --locked --workspace --bins
	$(PY) scripts/local_stack.py --sagemaker $(STANDIN) --standin-runtime --lambda -- \
		$(PY) scripts/serve.py --auth '$(AUTH)' $(if $(CATALOG),--catalog '$(CATALOG)') $(if $(filter 1,$(APPROVALS)),--approvals)

# The official MCP conformance suite against mcp-tools on the local stack: every server scenario
# (the 2026-07-28 requirements at that revision, then the rest by name); one line per scenario,
# results in .local/conformance/.
conformance: venv $(CONFORMANCE)
	cargo build --locked --workspace --bins
	$(PY) scripts/local_stack.py --sagemaker $(STANDIN) --step-millis 100 --lambda -- \
		$(PY) scripts/conformance.py

# Release builds for this machine (what runs) and zipped for arm64 (what Lambda takes), the
# Python reference's runtime, the SDK replay (the second floor, for mcp-tools and the event
# functions), then bench/run.py: cold starts, warm latency against the floor, AWS calls per
# operation, SQS batches, criterion, sizes; a first invocation's instructions under valgrind's
# callgrind, checked for before the builds.
# Writes BENCHMARKS.md.
FUNCTION_BINS := --bin notification-handler --bin pipeline-router --bin mcp-tools --bin gateway-target --bin event-delivery
bench: venv rust-target
	@command -v valgrind >/dev/null && command -v callgrind_control >/dev/null || \
		{ echo "make bench needs valgrind (callgrind counts a first invocation's instructions): apt-get install valgrind"; exit 1; }
	$(PY) -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	cargo build --release --locked $(FUNCTION_BINS) --bin empty-buffered --bin empty-streaming --bin empty-sdk
	cargo build --release --locked -p adapters --features s3,sqs,sagemaker-runtime --example sdk_replay
	cargo lambda build --release --arm64 --locked --output-format zip $(FUNCTION_BINS)
	AWS_LC_SYS_NO_JITTER_ENTROPY=0 cargo build --release --locked -q --manifest-path bench/entropy/Cargo.toml \
		--target-dir target/entropy-jitter
	AWS_LC_SYS_NO_JITTER_ENTROPY=1 cargo build --release --locked -q --manifest-path bench/entropy/Cargo.toml \
		--target-dir target/entropy-no-jitter
	$(PY) bench/run.py

# The cost section of BENCHMARKS.md alone (bench/run.py --cost-only): the functions' release
# builds for this machine and about a minute of run.
bench-cost: venv
	$(PY) -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	cargo build --release --locked $(FUNCTION_BINS)
	$(PY) bench/run.py --cost-only

# The hostile-input section of BENCHMARKS.md alone (bench/run.py --hostile-only): mcp-tools'
# release build and about a minute of run, no AWS stand-in.
bench-hostile: venv
	$(PY) -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	cargo build --release --locked --bin mcp-tools
	$(PY) bench/run.py --hostile-only

fmt:
	cargo fmt --all

# Clippy runs as `cargo clippy` runs it (clippy-driver wrapping rustc for workspace members only,
# with its arguments in CLIPPY_ARGS), but in a build instead of a check: the dependencies are then
# the very ones the tests link, where a `cargo clippy` would compile all of them a second time
# (minutes of CPU for aws-sdk-sagemaker alone).
CLIPPY_DRIVER = $(shell rustup which clippy-driver 2>/dev/null || command -v clippy-driver)
lint:
	cargo fmt --all --check
	@test -n "$(CLIPPY_DRIVER)" || { echo "error: clippy is not installed; run: rustup component add clippy" >&2; exit 1; }
	RUSTC_WORKSPACE_WRAPPER=$(CLIPPY_DRIVER) CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__ \
		cargo build --workspace --all-targets --locked

ARM64 := aarch64-unknown-linux-gnu
# sam validate and sam build run offline but still want a region: the caller's when set, else any.
# Deploys never get this fallback: they use the caller's region (scripts/aws_region.py).
SAM_OFFLINE := SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-$${AWS_REGION:-us-east-1}} $(VENV)/bin/sam
SAM_DEPLOY := SAM_CLI_TELEMETRY=0 $(VENV)/bin/sam

rust-target:
	@rustup target list --installed 2>/dev/null | grep -qx $(ARM64) || rustup target add $(ARM64) || { \
		echo "error: the Rust target $(ARM64) is missing and could not be added; run: rustup target add $(ARM64)" >&2; exit 1; }

build: venv rust-target
	cargo lambda build --release --arm64 --locked $(FUNCTION_BINS)

# The AgentCore Gateway target's inline tool schema, from the tools' own schemas: into
# infra/gateway-tool-schema.json and the template. A test fails when either is out of date.
tool-schema:
	cargo run --locked -q -p gateway-target --bin export-tool-schema

lint-infra: venv
	$(VENV)/bin/cfn-lint infra/template.yaml
	$(SAM_OFFLINE) validate --lint --config-file samconfig.toml

# The tool catalog's layer (the template's ToolCatalogLayer): make catalog fills it; sam build and
# sam package need the directory even when it is empty and no catalog is deployed.
CATALOG_LAYER := target/tool-catalog-layer

# What sam builds and deploys: infra/template.yaml, with the AgentCore Gateway's tool schema
# listing the catalog's tools when the layer holds one (it lists today's tools otherwise). Beside
# infra/ under the root, so the template's relative paths (CodeUri, the layer) still hold.
SAM_TEMPLATE := target/template.yaml
sam-template:
	@mkdir -p $(CATALOG_LAYER)
	@catalog=$$(find $(CATALOG_LAYER) -name '*.json' -type f | head -n 1); \
	if [ -n "$$catalog" ]; then \
		cargo run --locked -q -p gateway-target --bin export-tool-schema -- --catalog "$$catalog" \
			--template-out $(SAM_TEMPLATE); \
	else cp infra/template.yaml $(SAM_TEMPLATE); fi

# The catalog is checked as mcp-tools checks it at cold start (scripts/catalog.py runs its
# check-catalog, which names each mistake), then copied into the layer; the deploys derive ToolCatalog, CatalogEndpointNames and
# CatalogPipelineNames from what the layer holds (scripts/catalog.py).
catalog: venv
	@test -n "$(CATALOG)" || { echo "usage: make catalog CATALOG=path/to/catalog.json (CATALOG=none: no catalog)" >&2; exit 2; }
	@if [ '$(CATALOG)' = none ]; then $(PY) scripts/catalog.py --layer-dir $(CATALOG_LAYER) clear; else \
		cargo build --locked -q -p mcp-tools --bin check-catalog && \
		$(PY) scripts/catalog.py --layer-dir $(CATALOG_LAYER) install '$(CATALOG)' --models '$(MODELS)'; fi

# sam build runs cargo lambda build --release --arm64 for each function, offline, into .aws-sam/.
build-sam: venv rust-target sam-template
	$(SAM_OFFLINE) build --config-file samconfig.toml --template-file $(SAM_TEMPLATE)

# The same sam build in SAM's debug mode (no --release), as `make test` runs it: the template,
# the rust-cargolambda builder, the arm64 cross-build and each function's binary, in a fraction
# of a cold release build's time. Its own target and build dirs keep it apart from what
# `make build-sam` and `sam deploy` use.
SAM_DEBUG := target/sam-debug
sam-build-debug: venv rust-target lint-infra sam-template
	SAM_BUILD_MODE=debug CARGO_TARGET_DIR=$(CURDIR)/$(SAM_DEBUG) $(SAM_OFFLINE) build --config-file samconfig.toml \
		--template-file $(SAM_TEMPLATE) --build-dir $(SAM_DEBUG)/build
	$(PY) scripts/check_sam_build.py $(SAM_DEBUG)/build

# The first deployment asks what it decides (scripts/deploy_guided.py: the stack's name and the
# template's first parameter group, each answer checked at its prompt as preflight checks it),
# saves the answers in samconfig.toml and runs make deploy's preflight on them; only then does it
# build and deploy, with no further question. Later ones (make deploy) redeploy from
# samconfig.toml, checked first the same way. Both deploy to the caller's region
# (scripts/aws_region.py), given to sam deploy so that a region saved in samconfig.toml never
# wins: the doctor, wire-endpoint and redrive look in the same one. Both pass the tool catalog's
# parameters for what the layer holds (empty without a catalog) after the saved ones, which a
# command line's --parameter-overrides would otherwise replace, then PARAMS ("Name=Value ...",
# for this deploy; the stack keeps them, as sam deploy gives a parameter left out its previous
# value). QUESTIONS=all: SAM's own guided deploy instead, over every parameter, after the build
# (only the region and the catalog are checked before it).
CATALOG_OVERRIDES = overrides=$$($(PY) scripts/catalog.py --layer-dir $(CATALOG_LAYER) overrides \
	--samconfig samconfig.toml) && mapfile -t overrides <<< "$$overrides"

# After make build-sam; $(1): sam deploy's options beside the config file, region and parameters.
SAM_DEPLOY_SAVED = region=$$($(PY) scripts/aws_region.py) && echo "Deploying to $$region" && $(CATALOG_OVERRIDES) && \
	$(SAM_DEPLOY) deploy --config-file samconfig.toml --region "$$region" $(1) \
	--parameter-overrides "$${overrides[@]}" $(foreach p,$(PARAMS),'$(p)')
SAM_NO_QUESTION := --no-confirm-changeset --no-fail-on-empty-changeset

preflight-deploy: venv
	@$(PY) scripts/preflight.py deploy --layer-dir $(CATALOG_LAYER) $(if $(STACK),--stack-name '$(STACK)') \
		--params '$(PARAMS)'

ifeq ($(QUESTIONS),all)
GUIDED_STACK = $(or $(STACK),$(shell grep -q '^stack_name' samconfig.toml 2>/dev/null || echo mcp-async-jobs))
deploy-guided: venv
	@$(PY) scripts/preflight.py guided --layer-dir $(CATALOG_LAYER)
	@$(MAKE) --no-print-directory build-sam
	@$(call SAM_DEPLOY_SAVED,--guided $(if $(GUIDED_STACK),--stack-name '$(GUIDED_STACK)'))
else
deploy-guided: venv
	@$(PY) scripts/deploy_guided.py --layer-dir $(CATALOG_LAYER) $(if $(STACK),--stack-name '$(STACK)') \
		--params '$(PARAMS)'
	@$(MAKE) --no-print-directory build-sam
	@$(call SAM_DEPLOY_SAVED,$(SAM_NO_QUESTION))
endif

deploy: preflight-deploy
	@$(MAKE) --no-print-directory build-sam
	@$(call SAM_DEPLOY_SAVED,$(SAM_NO_QUESTION) $(if $(STACK),--stack-name '$(STACK)'))

# Deletes a stack and what it leaves behind (scripts/destroy.py): the objects and versions it wrote
# under inputs/ and its output and failure prefixes in the IO bucket (the bucket stays), then the
# stack; the tables it keeps by policy are named, with how to delete them. A CDK stack has the
# same outputs: make cdk-destroy is the same with the CDK app's default name.
destroy: venv
	@test -n "$(STACK)" || { echo "usage: make destroy STACK=<name> [ARGS=\"--dry-run | --yes --delete-tables" \
		"--keep-objects\"]" >&2; exit 2; }
	$(PY) scripts/destroy.py --stack-name '$(STACK)' $(ARGS)

cdk-destroy: venv
	$(PY) scripts/destroy.py --stack-name '$(or $(STACK),mcp-async-jobs)' $(ARGS)

# Replays a deployed stack's failure DLQ through its functions (scripts/redrive.py): STACK=<name>,
# or QUEUE_URL, NOTIFICATION_HANDLER and PIPELINE_ROUTER (e.g. for the SQS buffer's DLQ); ARGS
# passes more options (ARGS=--event-deliveries: MCP Events' delivery DLQ, moved back by SQS).
REDRIVE_FLAGS = $(strip $(if $(STACK),--stack-name '$(STACK)') \
	$(if $(QUEUE_URL),--queue-url '$(QUEUE_URL)') \
	$(if $(NOTIFICATION_HANDLER),--notification-handler '$(NOTIFICATION_HANDLER)') \
	$(if $(PIPELINE_ROUTER),--pipeline-router '$(PIPELINE_ROUTER)'))
redrive: venv
	@test -n "$(REDRIVE_FLAGS)" || { echo "usage: make redrive STACK=<name> | QUEUE_URL=<url>" \
		"NOTIFICATION_HANDLER=<name> PIPELINE_ROUTER=<name> [ARGS=\"--dry-run --max N\"]," \
		"or STACK=<name> | QUEUE_URL=<url> ARGS=--event-deliveries" >&2; exit 2; }
	$(PY) scripts/redrive.py $(REDRIVE_FLAGS) $(ARGS)

# A deployed stack's wiring, one line per check (scripts/doctor.py): STACK=<name>, ARGS for more
# options (explicit names, see scripts/doctor.py --help).
doctor: venv
	@test -n "$(STACK)$(ARGS)" || { echo "usage: make doctor STACK=<name> [ARGS=...]" >&2; exit 2; }
	$(PY) scripts/doctor.py $(if $(STACK),--stack-name '$(STACK)') $(ARGS)

# Wires an existing endpoint to a stack (scripts/wire_endpoint.py): a copy of its EndpointConfig
# with the stack's topics and S3 paths, then UpdateEndpoint; prints the policy its execution role
# needs. ARGS="--dry-run" only prints; ARGS="--wait" waits until the endpoint is InService again;
# ATTACH_ROLE_POLICY=1 puts the policy on the role.
wire-endpoint: venv
	@test -n "$(STACK)$(ARGS)" || { echo "usage: make wire-endpoint STACK=<name> [ATTACH_ROLE_POLICY=1]" \
		"[ARGS=\"--dry-run\"]" >&2; exit 2; }
	$(PY) scripts/wire_endpoint.py $(if $(STACK),--stack-name '$(STACK)') \
		$(if $(filter 1 true yes,$(ATTACH_ROLE_POLICY)),--attach-role-policy) $(ARGS)

clean:
	cargo clean
	rm -rf $(VENV) .local
