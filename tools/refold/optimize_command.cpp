// `refold optimize`: load, run the pass pipeline, save, and optionally prove OUT equals IN
// (refold::optimize_model, refold/optimize.h).
#include <fmt/format.h>

#include "commands.h"
#include "refold/model_inputs.h"
#include "refold/optimize.h"

namespace refold::cli {

int optimize_command(const OptimizeArgs& args, std::FILE* out) {
  OptimizeOptions options;
  options.verify = args.verify;
  options.disabled.insert(args.disable.begin(), args.disable.end());
  options.load = args.load;
  options.input_shapes = parse_input_shapes(args.input_shapes);  // checked against the model
  const OptimizedModel result = optimize_model(args.input, args.output, options);
  fmt::print(out, "{}",
             args.json ? result.report.to_json() + "\n" : result.report.to_string(args.verbose));
  return 0;
}

}  // namespace refold::cli
