#pragma once
// The binary form of a program: the same content as the text, compact and checked.
//
// Layout (little-endian): magic "TSPRG\0\0\1" (8 bytes), version u32, payload length u64,
// FNV-1a 64-bit checksum of the payload u64, payload. The payload is the program's fields in a
// fixed order, integers as zigzag LEB128 varints, doubles as their 8 IEEE bytes, strings as a
// varint length and bytes. decode(encode(p)) == p for every program.
#include "tessera/chipsim/isa.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::chipsim {

/// Version written by encode_program and the only one decode_program accepts.
constexpr uint32_t kBinaryFormatVersion = 1;

/// Serialises a program.
std::vector<uint8_t> encode_program(const Program &program);
/// Parses a binary program; throws AsmError naming `origin`, the byte offset and the problem
/// (bad magic, unsupported version, truncated, checksum mismatch, bad field value).
Program decode_program(const std::vector<uint8_t> &bytes, const std::string &origin = "<binary>");
/// True when the bytes start with the binary magic (so a tool can accept either form).
bool is_binary_program(const std::vector<uint8_t> &bytes);

} // namespace tessera::chipsim
