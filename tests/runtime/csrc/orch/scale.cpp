// scale(a, out, alpha): out = a * alpha.
#include "../orch.h"
ENTRY { return submit2(api, K_SCALE, t[0], IN, t[1], OUT, 1, s[0]); }
