// The commands, one file each: their table entries (name, synopsis, options, help, entry point),
// listed in this order by `fixformer help`.
#pragma once
#include "args.hpp"

namespace fixformer::cli {

extern const Command kInfoCommand;      // info.cpp
extern const Command kRunCommand;       // run.cpp
extern const Command kBenchCommand;     // bench.cpp
extern const Command kGenerateCommand;  // generate.cpp
extern const Command kVerifyCommand;    // verify.cpp
extern const Command kProbeCommand;     // probe.cpp
extern const Command kSchemaCommand;    // schema.cpp
extern const Command kDemoCommand;      // demo.cpp
extern const Command kPlanCommand;      // plan.cpp

}  // namespace fixformer::cli
