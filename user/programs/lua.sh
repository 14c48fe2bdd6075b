#!/bin/sh
# lua smoke test: strings, tables, io, io.popen, os.execute, coroutines
cd /tmp && lua - <<'LUA'
local t = {}
for i = 1, 10 do t[#t+1] = string.format("%d^2=%d", i, i*i) end
print(table.concat(t, " "))
local words, counts, keys = {}, {}, {}
for w in ("the quick brown fox jumps over the lazy dog the end"):gmatch("%a+") do
  words[#words+1] = w; counts[w] = (counts[w] or 0) + 1
end
for k in pairs(counts) do keys[#keys+1] = k end
table.sort(keys)                              -- never print raw pairs() order
for _, k in ipairs(keys) do io.write(k, "=", counts[k], " ") end print()
print(("ab"):rep(3, "-"):upper(), ("%5.2f|%x|%q"):format(math.pi, 255, "a\nb"))
print(("hello world"):gsub("o", "0"), ("key = value"):match("^(%w+)%s*=%s*(%w+)$"))
local f = assert(io.open("lua-smoke.txt", "w"))
for i = 1, 5 do f:write("line ", i, "\n") end
f:close()
local n = 0
for l in io.lines("lua-smoke.txt") do n = n + #l end
print("bytes", n, assert(io.open("lua-smoke.txt")):seek("end"))
local p = assert(io.popen("echo from-child; wc -l < lua-smoke.txt"))
io.write(p:read("a")) print(p:close())
print(os.execute("exit 3"))
local w = assert(io.popen("cat > lua-smoke2.txt", "w")) w:write("piped\n") w:close()
print(io.open("lua-smoke2.txt"):read("l"))
print(os.remove("lua-smoke.txt"), os.remove("lua-smoke2.txt"), select(3, os.remove("nope")))
math.randomseed(42) print(math.random(1, 1000), math.random(1, 1000))
local co = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i * 10) end end)
print(co(), co(), co())
print(pcall(error, "boom", 0))
print(utf8.char(72, 228, 8364), utf8.len("äö€"), #string.pack("i4i8", 1, 2))
print(1 // 0.0 == math.huge, 7 // 2, 7 % -3, 2^53, math.maxinteger, 10 / 4)
local fib = {} setmetatable(fib, {__index = function(s, k) local v = k < 2 and k or s[k-1] + s[k-2]; s[k] = v; return v end})
print(fib[80], collectgarbage("count") > 0)
LUA
