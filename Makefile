# The two commands: `make run` (the bot and the Slack emulator, locally; `make run ARGS="--slack-port 8080"`) and
# `make test` (everything; `make test ARGS="-k slack -x"` passes arguments to pytest).
.PHONY: run test bench

run:
	bash scripts/run.sh $(ARGS)

test:
	bash scripts/test.sh $(ARGS)

bench:
	bash scripts/bench.sh
