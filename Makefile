# The two commands: `make run` (the bot and the Slack emulator, locally) and `make test` (everything).
.PHONY: run test bench

run:
	bash scripts/run.sh

test:
	bash scripts/test.sh

bench:
	bash scripts/bench.sh
