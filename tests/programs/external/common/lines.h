// Shared by the test kernels: reached through a relative include, as a kernel tree does.
#pragma once
#include <cstdint>
static constexpr int32_t kFloatsPerLine = 16;
#include "scale.h"
