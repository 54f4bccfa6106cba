// judge/protocol.h — the wire format between the judge and its worker processes: each message is
// an 8-byte little-endian header length, a JSON header, then `header["payload"]` raw bytes
// (tensor data, back to back in the order the header lists them).
//
// Requests (judge → worker), each answered by one reply unless said otherwise:
//   {"op":"load","library":PATH}
//   {"op":"put","set":ID,"args":[{"dtype":CODE,"shape":[..],"scalar":bool,"output":bool,"nbytes":N}]}
//     with every input's bytes as payload (outputs: dtype and shape only; the worker never
//     receives a reference output). Refused with "no_room" when the device is full.
//   {"op":"drop","sets":[ID..]} (or no "sets": every set)
//   {"op":"run","sets":[ID..],"calls":N,"warmup":W} → {"ready":true} (or "missing_set"); then N
//     times: {"op":"call","set":ID} → {"ok":true} once the call finished and its guard zones are
//     intact; {"op":"after","fetch":bool,"inputs":bool} → {"ok":true,"payload":BYTES} with the
//     call's outputs (when fetch) and "input_written":INDEX (when inputs and one changed). After
//     the N-th: {"ok":true,"samples_us":[the N − W timed calls],"activity":[..]}. Instead of a
//     "call", {"op":"abort"} ends the run early → {"ok":true,"aborted":true}. Any failure ends
//     the run with {"ok":false,..}; "call"/"after"/"abort" messages the worker reads outside a
//     run are dropped without a reply.
//   {"op":"calibrate","request":{..}}; {"op":"exit"}.
// Replies: {"ok":true,...} or {"ok":false,"verdict":NAME,"message":TEXT,"fatal":bool}. The first
// message a worker sends is its hello: {"ok":true,"target":..,"device":{..}}.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ka::wire {

// Guard zones: every argument buffer of every call has kGuardBytes of kCanaryByte on each side.
inline constexpr size_t kGuardBytes = 256;
inline constexpr unsigned char kCanaryByte = 0xA5;

// Encodes the 8-byte length prefix and header (the payload follows separately).
std::string encode_header(const nlohmann::json& header);
// Blocking helpers for the worker side (plain fds).
bool read_full(int fd, void* data, size_t n);
bool write_full(int fd, const void* data, size_t n);
bool read_header(int fd, nlohmann::json& header);
bool write_message(int fd, const nlohmann::json& header, const std::vector<std::pair<const void*, size_t>>& payload = {});

}  // namespace ka::wire
