#pragma once
#include "mica_tt_api/compute.hpp"
