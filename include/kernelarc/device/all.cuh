// kernelarc/device/all.cuh — the whole device layer (each header also stands alone).
#pragma once
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/copy.cuh>
#include <kernelarc/device/launch.cuh>
#include <kernelarc/device/mma.cuh>
#include <kernelarc/device/paged.cuh>
#include <kernelarc/device/ragged.cuh>
#include <kernelarc/device/reduce.cuh>
#include <kernelarc/device/softmax.cuh>
#include <kernelarc/device/sync.cuh>
#include <kernelarc/device/target.cuh>
#include <kernelarc/device/trace.cuh>
#include <kernelarc/device/wgmma.cuh>
