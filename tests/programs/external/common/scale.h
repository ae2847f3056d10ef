#pragma once
static constexpr float kScale = 1.0f;
