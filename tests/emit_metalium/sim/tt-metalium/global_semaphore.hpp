#pragma once
#include "mica_tt_sim.hpp"
