# Files from the shell: mkdir, cp, mv, rm, ln, find, tar, gzip, gunzip,
# sha256sum, ls, redirections, test.
cd /tmp && rm -rf work && mkdir -p work/a/b && cd work
echo first > a/one.txt
echo second >> a/one.txt
cp a/one.txt a/b/two.txt
mv a/b/two.txt a/three.txt
ln -s one.txt a/link
cat a/link
find . | sort
find . -name '*.txt' -type f | sort
ls a | sort
ls -l a/one.txt | awk '{ print $1, $2, $5, $NF }'
sha256sum a/one.txt
tar -cf archive.tar a
tar -tf archive.tar | sort
mkdir unpacked && tar -xf archive.tar -C unpacked && cat unpacked/a/three.txt
gzip -k a/one.txt && ls a/one.txt.gz && gunzip -c a/one.txt.gz
seq 1 1000 > big && gzip big && gunzip big.gz && wc -l big
rm -r a/b && test ! -e a/b && echo "b removed"
rm missing-file; echo "rm status $?"
cat missing-file 2> err.txt; echo "cat status $?"; cat err.txt
[ -d a ] && [ -f a/one.txt ] && [ -L a/link ] && echo "tests ok"
cd / && rm -rf /tmp/work && ls /tmp/work 2>&1 | sed 's/.*: //'
