// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* viw: the tracepoints' definitions (viw_trace.h). */
#define CREATE_TRACE_POINTS
#include "viw_trace.h"
