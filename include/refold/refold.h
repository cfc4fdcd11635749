// Everything public in one include.
#pragma once

#include "refold/dtype.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/memory_format.h"
#include "refold/nn/module.h"
#include "refold/op_options.h"
#include "refold/reference.h"
#include "refold/state_dict.h"
#include "refold/tensor.h"
#include "refold/version.h"
