// judge/protocol.h — the wire format between the judge and its worker processes: each message is
// an 8-byte little-endian header length, a JSON header, then `header["payload"]` raw bytes
// (tensor data, back to back in the order the header lists them).
//
// Requests (judge → worker): {"op":"load","library":PATH}; {"op":"run","mode":"check"|"time",
// "args":[{"dtype":CODE,"shape":[..],"scalar":bool,"output":bool,"nbytes":N}], "warmup":W,
// "iterations":R} with every input's bytes as payload; {"op":"exit"}.
// Replies: {"ok":true,...} or {"ok":false,"verdict":NAME,"message":TEXT,"fatal":bool}. The first
// message a worker sends is its hello: {"ok":true,"target":..,"device":{..}}.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ka::wire {

// Encodes the 8-byte length prefix and header (the payload follows separately).
std::string encode_header(const nlohmann::json& header);
// Blocking helpers for the worker side (plain fds).
bool read_full(int fd, void* data, size_t n);
bool write_full(int fd, const void* data, size_t n);
bool read_header(int fd, nlohmann::json& header);
bool write_message(int fd, const nlohmann::json& header, const std::vector<std::pair<const void*, size_t>>& payload = {});

}  // namespace ka::wire
