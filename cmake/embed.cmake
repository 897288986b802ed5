# Writes OUT: a C header declaring `static const char NAME[]` with the bytes
# of IN, so the micro-kernel templates ship inside the binary (no file to
# find at run time).  Usage: cmake -DIN=... -DOUT=... -DNAME=... -P embed.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed.cmake */\nstatic const char ${NAME}[] = {${bytes} 0x00};\n")
