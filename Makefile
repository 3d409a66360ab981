# The two commands that do all the set-up on a fresh machine.
.PHONY: demo test install up down
demo:      ## install, start services, run the demo domain end to end
	bash scripts/demo.sh
test:      ## install, start services, run the test suite, stop services
	bash scripts/test.sh
install:
	bash scripts/install.sh
up:
	bash scripts/up.sh
down:
	bash scripts/down.sh
