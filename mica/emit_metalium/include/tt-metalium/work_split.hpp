#pragma once
#include "mica_tt_api/host.hpp"
