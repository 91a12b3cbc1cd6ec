// MICA, not tt-metal: the marker of declarations read from tt-metal (see ../README.md).
#pragma once
#ifdef MICA_API_TRACE
#define MICA_API [[deprecated("mica-api")]]
#else
#define MICA_API
#endif
