# Text tools and pipelines: echo, cat, grep, sed, awk, sort, uniq, wc,
# head, tail, seq, xargs, env, tr, cut, printf.
cd /tmp
printf 'banana\napple\ncherry\napple\nbanana\napple\n' > fruit
cat fruit | sort | uniq -c | sort -rn
grep -c apple fruit
grep -n cherry fruit
grep -v a fruit; echo "grep none: $?"
sed -e 's/an/AN/g' -e '/cherry/d' fruit | head -3
awk '{ count[$1]++ } END { for (f in count) print f, count[f] }' fruit | sort
wc -l < fruit
wc -c fruit
seq 1 10 | tail -3
seq 5 | xargs echo numbers:
seq 3 | xargs -n 1 echo item
echo "a:b:c" | cut -d: -f2
echo hello | tr a-z A-Z
printf '%s=%d\n' answer 42
env | sort
echo $((3 * 7)) $(( (1 << 10) - 1 ))
x=outer; ( x=inner; echo "subshell $x" ); echo "after $x"
echo one two three | { read a b c; echo "$c $b $a"; }
