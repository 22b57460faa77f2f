// The precompiled header of every GoogleTest binary (tests/CMakeLists.txt, FARMEM_TEST_PCH):
// GoogleTest, the standard headers most tests use and the runtime and client API. Parsing these
// is most of a test file's compile time; precompiled once per binary, they are parsed once.
// Every test still includes what it uses: the build must pass with FARMEM_TEST_PCH=OFF.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/client/thread_client.h"
#include "farmem/runtime/scheduler.h"
