#pragma once
// SURGE_VERSION: the project's version, which tools/CMakeLists.txt stamps into the surge program;
// "unknown" where a file is compiled without it.
#ifndef SURGE_VERSION
#define SURGE_VERSION "unknown"
#endif
