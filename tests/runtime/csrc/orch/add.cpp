// add(a, b, out): one task.
#include "../orch.h"
ENTRY { return submit3(api, K_ADD, t[0], IN, t[1], IN, t[2], OUT); }
