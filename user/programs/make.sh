#!/bin/sh
# make smoke test: pattern rules, automatic vars, functions, $(shell), sub-make, intermediates
D=/tmp/mksmoke; rm -rf "$D"; mkdir -p "$D" && cd "$D" || exit 1
cat > Makefile <<'MK'
NAMES := gamma alpha beta
OBJS  := $(patsubst %,out/%.o,$(sort $(NAMES)))
define banner
@echo "== $(1) ($(words $(2)) items)"
endef
all: out/result.txt
	$(call banner,result,$(OBJS))
	@cat $<
	@$(MAKE) -s --no-print-directory -f sub.mk N=$(words $(NAMES))
out:
	mkdir -p $@
out/%.o: %.src | out
	@echo "compile $< -> $@"
	tr a-z A-Z < $< > $@
out/result.txt: $(OBJS)
	cat $^ > $@
	echo "lines: $$(cat $^ | wc -l)" >> $@
%.src:
	echo "source $* $(shell echo $* | wc -c)" > $@
clean:
	rm -rf out
.PHONY: all clean
MK
printf 'all:\n\t@echo "sub-make got N=$(N) $(if $(filter 3,$(N)),three,other)"\n' > sub.mk
make
make
rm out/beta.o && make
make clean
