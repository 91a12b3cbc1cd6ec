#pragma once
#include "mica_tt_api/dataflow.hpp"
