// refold._refold: the Python binding of refold's public C++ API (refold/session.h,
// refold/optimize.h, the CLI). python/refold/__init__.py re-exports it; the docstrings here are
// what help() shows, and python/refold/_refold.pyi repeats the signatures for IDEs.
//
// Arrays in: any object with __dlpack__ or the buffer protocol (NumPy, torch tensors on the
// CPU) becomes a refold::Tensor over the same memory, without a copy, when it is float32,
// int64 or bfloat16 with non-negative strides — strides are kept as they are, so a
// channels_last torch tensor arrives as an NHWC refold tensor. Other integer and bool arrays
// are converted to int64 (refold holds every integer input as int64), float16 to float32.
// Arrays out: NumPy arrays over the result tensors' memory (no copy), kept alive by a capsule.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "refold/error.h"
#include "refold/onnx/onnx.h"
#include "refold/optimize.h"
#include "refold/session.h"
#include "refold/subnormals.h"
#include "refold/threads.h"
#include "refold/version.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using refold::DType;
using refold::Error;
using refold::Tensor;
using InArray = nb::ndarray<nb::ro, nb::device::cpu>;

// ONNX element type code → the NumPy dtype name a user would pass.
const char* dtype_name(int elem_type) {
  switch (elem_type) {
    case 1:
      return "float32";
    case 2:
      return "uint8";
    case 3:
      return "int8";
    case 4:
      return "uint16";
    case 5:
      return "int16";
    case 6:
      return "int32";
    case 7:
      return "int64";
    case 9:
      return "bool";
    case 10:
      return "float16";
    case 11:
      return "float64";
    case 12:
      return "uint32";
    case 13:
      return "uint64";
    case 16:
      return "bfloat16";
    default:
      return "unknown";
  }
}

std::string describe_dtype(nb::dlpack::dtype d) {
  const char* kind = "?";
  switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
    case nb::dlpack::dtype_code::Int:
      kind = "int";
      break;
    case nb::dlpack::dtype_code::UInt:
      kind = "uint";
      break;
    case nb::dlpack::dtype_code::Float:
      kind = "float";
      break;
    case nb::dlpack::dtype_code::Bfloat:
      kind = "bfloat";
      break;
    case nb::dlpack::dtype_code::Bool:
      return "bool";
    case nb::dlpack::dtype_code::Complex:
      kind = "complex";
      break;
    default:
      break;
  }
  return std::string(kind) + std::to_string(d.bits);
}

// Casts `obj` to a CPU array: directly (DLPack, buffer protocol) or through numpy.asarray
// (lists, scalars, objects with __array__), as `dtype` when given (the input's declared type).
InArray as_array(const std::string& name, nb::handle obj, const char* dtype = nullptr) {
  InArray a;
  if (nb::try_cast(obj, a)) return a;
  // A torch tensor that requires grad refuses DLPack export; its values are what it holds.
  if (nb::hasattr(obj, "requires_grad") && nb::hasattr(obj, "detach")) {
    nb::object detached = obj.attr("detach")();
    if (nb::try_cast(detached, a)) return a;
  }
  nb::object converted;
  try {
    nb::object np = nb::module_::import_("numpy");
    converted = dtype != nullptr ? np.attr("asarray")(obj, dtype) : np.attr("asarray")(obj);
  } catch (const nb::python_error&) {
    converted = nb::none();
  }
  if (!converted.is_none() && nb::try_cast(converted, a)) return a;
  throw Error("input '" + name + "': a " + std::string(nb::type_name(obj.type()).c_str()) +
              " is not an array (give a NumPy array, a CPU torch tensor or anything with "
              "__dlpack__)");
}

// `a` as `dtype` through numpy (a copy), for the element types refold holds in a wider one.
InArray converted(const std::string& name, const InArray& a, const char* dtype) {
  nb::object np = nb::module_::import_("numpy");
  nb::object copy = np.attr("asarray")(nb::cast(a)).attr("astype")(dtype);
  return as_array(name, copy);
}

// `declared`: the input's ONNX element type, for objects that are not arrays yet (a list).
Tensor to_tensor(const std::string& name, nb::handle obj, int declared = 0) {
  const bool known = declared == 1 || declared == 7 || declared == 9 || declared == 6;
  InArray a = as_array(name, obj, known ? dtype_name(declared) : nullptr);
  const nb::dlpack::dtype d = a.dtype();
  const auto code = static_cast<nb::dlpack::dtype_code>(d.code);
  DType dtype;
  if (code == nb::dlpack::dtype_code::Float && d.bits == 32) {
    dtype = DType::Float32;
  } else if (code == nb::dlpack::dtype_code::Int && d.bits == 64) {
    dtype = DType::Int64;
  } else if (code == nb::dlpack::dtype_code::Bfloat && d.bits == 16) {
    dtype = DType::BFloat16;
  } else if (code == nb::dlpack::dtype_code::Int || code == nb::dlpack::dtype_code::UInt ||
             code == nb::dlpack::dtype_code::Bool) {
    return to_tensor(name, nb::cast(converted(name, a, "int64")));
  } else if (code == nb::dlpack::dtype_code::Float && d.bits == 16) {
    return to_tensor(name, nb::cast(converted(name, a, "float32")));
  } else {
    throw Error("input '" + name + "': dtype " + describe_dtype(d) +
                " is not supported (give float32, an integer or bool type, float16 or bfloat16)");
  }
  refold::Shape sizes(a.ndim()), strides(a.ndim());
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    sizes[i] = static_cast<std::int64_t>(a.shape(i));
    strides[i] = a.stride(i);
    if (strides[i] < 0) {  // a reversed view: refold's strides are non-negative
      nb::object copy = nb::module_::import_("numpy").attr("ascontiguousarray")(nb::cast(a));
      return to_tensor(name, copy);
    }
  }
  // The array object stays alive while any refold view of its memory does; the last view
  // drops it, under the GIL, from whichever thread that happens on.
  auto* keep = new InArray(a);
  return refold::from_blob(const_cast<void*>(a.data()), sizes, strides, dtype, [keep] {
    nb::gil_scoped_acquire gil;
    delete keep;
  });
}

nb::object to_numpy(Tensor t) {
  // NumPy has no bfloat16: such outputs come back as float32.
  if (t.dtype() == DType::BFloat16) t = t.to(DType::Float32);
  auto* owner = new Tensor(std::move(t));
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<std::size_t> shape;
  std::vector<std::int64_t> strides;
  for (std::int64_t i = 0; i < owner->dim(); ++i) {
    shape.push_back(static_cast<std::size_t>(owner->size(i)));
    strides.push_back(owner->stride(i));
  }
  const nb::dlpack::dtype dtype =
      owner->dtype() == DType::Int64 ? nb::dtype<std::int64_t>() : nb::dtype<float>();
  const Tensor& view = *owner;
  nb::ndarray<nb::numpy> array(const_cast<void*>(view.data_ptr()), shape.size(), shape.data(),
                               capsule, strides.data(), dtype);
  return array.cast();
}

nb::list value_infos(const std::vector<refold::graph::ValueInfo>& values) {
  nb::object cls = nb::module_::import_("refold._types").attr("ValueInfo");
  nb::list out;
  for (const auto& v : values) {
    nb::object shape = nb::none();
    if (v.shape) {
      nb::list dims;
      for (const auto& d : *v.shape) {
        if (d.is_static())
          dims.append(d.value);
        else if (!d.param.empty())
          dims.append(d.param);
        else
          dims.append(nb::none());
      }
      shape = nb::tuple(dims);
    }
    out.append(cls(v.name, shape, dtype_name(v.elem_type)));
  }
  return out;
}

refold::InputShapes input_shapes_from(const std::optional<nb::dict>& given) {
  refold::InputShapes shapes;
  if (!given) return shapes;
  for (auto [key, value] : *given) {
    const std::string name = nb::cast<std::string>(nb::str(key));
    refold::Shape dims;
    try {
      for (nb::handle d : value) dims.push_back(nb::cast<std::int64_t>(d));
    } catch (const std::exception&) {
      throw Error("input_shapes['" + name + "']: expected a sequence of ints");
    }
    shapes[name] = std::move(dims);
  }
  return shapes;
}

// A model argument: a path (str or os.PathLike) or the bytes of an ONNX file.
struct ModelArg {
  std::filesystem::path path;
  std::string bytes;
  bool in_memory = false;
};

ModelArg model_arg(nb::handle model) {
  ModelArg m;
  if (nb::isinstance<nb::bytes>(model) || nb::isinstance<nb::bytearray>(model) ||
      PyMemoryView_Check(model.ptr())) {
    nb::bytes b(nb::module_::import_("builtins").attr("bytes")(model));
    m.bytes.assign(b.c_str(), b.size());
    m.in_memory = true;
    return m;
  }
  try {
    m.path = nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(model));
  } catch (const std::exception&) {
    throw Error("model: expected a path (str, os.PathLike) or bytes, got a " +
                std::string(nb::type_name(model.type()).c_str()));
  }
  return m;
}

std::span<const std::byte> as_bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

// refold.optimize's result: the report and the optimized graph (for .model and .save()).
struct PyOptimizeResult {
  refold::OptimizedModel result;
};

nb::object json_loads(const std::string& text) {
  return nb::module_::import_("json").attr("loads")(nb::str(text.data(), text.size()));
}

// One entry of the report's JSON form.
nb::object report_entry(const refold::OptimizeReport& report, const char* key) {
  nb::object all = json_loads(report.to_json());
  return nb::steal(PyObject_GetItem(all.ptr(), nb::str(key).ptr()));
}

class PySession {
 public:
  PySession(nb::handle model, bool optimize, bool verify, std::optional<int> threads,
            const std::optional<nb::dict>& input_shapes, const std::vector<std::string>& disable) {
    refold::SessionOptions options;
    options.optimize = optimize;
    options.optimizer.verify = verify;
    options.threads = threads.value_or(0);
    if (threads && *threads < 1)
      throw Error("Session: threads (" + std::to_string(*threads) + ") must be >= 1");
    options.optimizer.input_shapes = input_shapes_from(input_shapes);
    options.optimizer.disabled.insert(disable.begin(), disable.end());
    const ModelArg m = model_arg(model);
    nb::gil_scoped_release release;
    session_ = m.in_memory
                   ? std::make_unique<refold::Session>(as_bytes(m.bytes), "<bytes>", options)
                   : std::make_unique<refold::Session>(m.path, options);
  }

  nb::list run(nb::handle outputs, nb::handle inputs) const {
    // A reference of its own: close() from another thread cannot free the session mid-run.
    const std::shared_ptr<const refold::Session> session = live_ptr();
    const refold::Session& s = *session;
    std::vector<Tensor> feeds = feeds_from(inputs);
    std::vector<std::size_t> picked = pick_outputs(outputs);
    std::vector<Tensor> results;
    {
      nb::gil_scoped_release release;
      results = s.run(feeds);
    }
    nb::list out;
    for (std::size_t i : picked) out.append(to_numpy(results[i]));
    return out;
  }

  nb::dict profile(nb::handle inputs) const {
    const std::shared_ptr<const refold::Session> session = live_ptr();
    const refold::Session& s = *session;
    std::vector<Tensor> feeds = feeds_from(inputs);
    refold::graph::RunProfile p;
    {
      nb::gil_scoped_release release;
      p = s.profile(feeds);
    }
    nb::list nodes;
    double total = 0;
    for (const auto& n : p.nodes) {
      nb::dict d;
      d["name"] = n.name;
      d["op_type"] = n.op_type;
      d["flops"] = n.flops;
      d["ms"] = n.milliseconds;
      d["bytes"] = n.bytes;
      d["layout_in"] = n.layout_in;
      d["layout_out"] = n.layout_out;
      d["implementations"] = n.implementations;
      total += n.milliseconds;
      nodes.append(d);
    }
    nb::list types;
    for (const auto& t : refold::graph::by_op_type(p)) {
      nb::dict d;
      d["op_type"] = t.op_type;
      d["nodes"] = t.nodes;
      d["ms"] = t.milliseconds;
      d["flops"] = t.flops;
      d["bytes"] = t.bytes;
      types.append(d);
    }
    nb::dict result;
    result["nodes"] = nodes;
    result["op_types"] = types;
    result["flops"] = p.flops;
    result["ms"] = total;
    return result;
  }

  // For bench/python_overhead.py: `runs` calls of the C++ Session::run on inputs converted once,
  // each timed in C++ (seconds), to set against Session.run's time from Python.
  std::vector<double> time_native(nb::handle inputs, int runs) const {
    const std::shared_ptr<const refold::Session> session = live_ptr();
    const std::vector<Tensor> feeds = feeds_from(inputs);
    std::vector<double> seconds;
    nb::gil_scoped_release release;
    for (int i = 0; i < runs; ++i) {
      const auto start = std::chrono::steady_clock::now();
      session->run(feeds);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return seconds;
  }

  nb::list inputs() const { return value_infos(live().inputs()); }
  nb::list outputs() const { return value_infos(live().outputs()); }
  std::optional<int> threads() const {
    const int t = live().threads();
    return t > 0 ? std::optional<int>(t) : std::nullopt;
  }
  nb::object report() const { return json_loads(live().report().to_json()); }
  std::string report_text(bool verbose) const { return live().report().to_string(verbose); }
  void close() { session_.reset(); }
  bool closed() const { return session_ == nullptr; }

 private:
  const refold::Session& live() const { return *live_ptr(); }
  std::shared_ptr<const refold::Session> live_ptr() const {
    if (!session_) throw Error("Session: the session is closed");
    return session_;
  }

  // Inputs: a mapping name → array, or a sequence in the model's input order.
  std::vector<Tensor> feeds_from(nb::handle inputs) const {
    const auto& declared = live().inputs();
    if (nb::isinstance<nb::dict>(inputs) || nb::hasattr(inputs, "keys")) {
      std::map<std::string, Tensor> named;
      for (nb::handle key : inputs.attr("keys")()) {
        const std::string name = nb::cast<std::string>(nb::str(key));
        int type = 0;
        for (const auto& v : declared) type = v.name == name ? v.elem_type : type;
        named[name] = to_tensor(name, inputs[key], type);
      }
      return live().inputs_by_position(named);
    }
    nb::list seq;
    try {
      seq = nb::list(inputs);
    } catch (const std::exception&) {
      throw Error("Session.run: inputs must be a dict {name: array} or a sequence of arrays");
    }
    if (seq.size() != declared.size())
      throw Error("Session.run: " + std::to_string(seq.size()) + " inputs given, the model takes " +
                  std::to_string(declared.size()));
    std::vector<Tensor> feeds;
    for (std::size_t i = 0; i < seq.size(); ++i)
      feeds.push_back(to_tensor(declared[i].name, seq[i], declared[i].elem_type));
    return feeds;
  }

  // The outputs to return: None (all) or a sequence of names, checked by the session.
  std::vector<std::size_t> pick_outputs(nb::handle outputs) const {
    std::vector<std::string> names;
    if (!outputs.is_none()) {
      if (nb::isinstance<nb::str>(outputs))
        throw Error("Session.run: outputs must be a list of names (or None), not a str");
      for (nb::handle o : outputs) names.push_back(nb::cast<std::string>(nb::str(o)));
      if (names.empty()) return {};
    }
    return live().output_positions(names);
  }

  std::shared_ptr<const refold::Session> session_;
};

}  // namespace

NB_MODULE(_refold, m) {
  m.doc() = "refold's C++ core (use the `refold` package, which re-exports it).";
  m.attr("__version__") = std::string(refold::version());
  m.attr("MODEL_TOLERANCE") = refold::OutputDiff::kModelTolerance;
  nb::exception<refold::Error>(m, "Error", PyExc_ValueError);

  nb::class_<PyOptimizeResult>(m, "OptimizeReport",
                               "What refold.optimize did: op counts, each pass's notes, the layout "
                               "plan and the verification.\n\nstr(report) reads as `refold "
                               "optimize` prints; report.to_dict() is its --json.")
      .def(
          "to_dict",
          [](const PyOptimizeResult& r) { return json_loads(r.result.report.to_json()); },
          "The report as a dict (what `refold optimize --json` prints).")
      .def(
          "to_string",
          [](const PyOptimizeResult& r, bool verbose) {
            return r.result.report.to_string(verbose);
          },
          "verbose"_a = false,
          "The report as `refold optimize` prints it (verbose: every pass's notes and the "
          "layout plan per node).")
      .def("__str__", [](const PyOptimizeResult& r) { return r.result.report.to_string(); })
      .def("__repr__",
           [](const PyOptimizeResult& r) {
             return "<refold.OptimizeReport " + r.result.report.input + ">";
           })
      .def_prop_ro(
          "op_counts_before",
          [](const PyOptimizeResult& r) { return r.result.report.pipeline.op_counts_before; },
          "Op type → count in the model as given.")
      .def_prop_ro(
          "op_counts_after",
          [](const PyOptimizeResult& r) { return r.result.report.pipeline.op_counts_after; },
          "Op type → count in the optimized model, as written to ONNX.")
      .def_prop_ro(
          "passes",
          [](const PyOptimizeResult& r) { return report_entry(r.result.report, "passes"); },
          "One dict per pass: {'pass', 'changed', 'notes'} (what it did or why it declined).")
      .def_prop_ro(
          "layout",
          [](const PyOptimizeResult& r) { return report_entry(r.result.report, "layout"); },
          "The layout plan: convs, channels_last weights, NCHW convs, the permutes.")
      .def_prop_ro(
          "layout_plan",
          [](const PyOptimizeResult& r) { return r.result.report.layout.to_string(); },
          "The layout plan per node, as text.")
      .def_prop_ro(
          "max_error",
          [](const PyOptimizeResult& r) -> std::optional<double> {
            const auto& v = r.result.report.verification;
            return v ? std::optional<double>(v->max_abs_error) : std::nullopt;
          },
          "max |optimized − original| over the verification's outputs (None: not verified).")
      .def_prop_ro(
          "model",
          [](const PyOptimizeResult& r) {
            const std::string bytes = refold::onnx::save_to_bytes(*r.result.graph);
            return nb::bytes(bytes.data(), bytes.size());
          },
          "The optimized model as ONNX bytes.")
      .def(
          "save",
          [](const PyOptimizeResult& r, nb::handle path) {
            const std::string p =
                nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(path));
            nb::gil_scoped_release release;
            refold::onnx::save(*r.result.graph, p);
          },
          "path"_a, "Writes the optimized model as ONNX (whole or not at all).");

  m.def(
      "optimize",
      [](nb::handle src, nb::handle dst, bool verify, const std::optional<nb::dict>& input_shapes,
         const std::vector<std::string>& disable) {
        refold::OptimizeOptions options;
        options.verify = verify;
        options.input_shapes = input_shapes_from(input_shapes);
        options.disabled.insert(disable.begin(), disable.end());
        const ModelArg m = model_arg(src);
        std::filesystem::path out;
        if (!dst.is_none())
          out = nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(dst));
        auto result = std::make_unique<PyOptimizeResult>();
        {
          nb::gil_scoped_release release;
          result->result = m.in_memory
                               ? refold::optimize_model(as_bytes(m.bytes), "<bytes>", out, options)
                               : refold::optimize_model(m.path, out, options);
        }
        return result.release();
      },
      "src"_a, "dst"_a = nb::none(), nb::kw_only(), "verify"_a = true,
      "input_shapes"_a = nb::none(), "disable"_a = std::vector<std::string>{},
      nb::rv_policy::take_ownership,
      "Optimizes an ONNX model (a path or bytes): folds BatchNorm, re-parameterizes "
      "multi-branch blocks, plans the memory layout. Writes it to dst when given. verify: "
      "prove the result equals the input on random inputs (max|diff| <= 1e-4 * max(1, "
      "max|ref|)), else raise refold.Error and write nothing. Returns an OptimizeReport.");

  nb::class_<PySession>(
      m, "Session",
      "An ONNX model loaded (a path or bytes), optimized once, then run many times.\n\n"
      "One Session may be run from several threads at once; run() releases the GIL.\n"
      "threads: the kernel threads each call uses (None: refold's default, the physical "
      "cores).\ninput_shapes: {name: shape} for verify's inputs where dims are symbolic; a "
      "model with symbolic dims runs at any size.\ndisable: pass names to skip "
      "(constant-folding, simplify, canonicalize, pad-folding, dead-code, dead-taps, "
      "linear-merging, group-merging, bn-folding, "
      "reparameterize, "
      "activation-fusion, layout).")
      .def(nb::init<nb::handle, bool, bool, std::optional<int>, const std::optional<nb::dict>&,
                    const std::vector<std::string>&>(),
           "model"_a, nb::kw_only(), "optimize"_a = true, "verify"_a = false,
           "threads"_a = nb::none(), "input_shapes"_a = nb::none(),
           "disable"_a = std::vector<std::string>{})
      .def("run", &PySession::run, "outputs"_a = nb::none(), "inputs"_a,
           "Runs the model. outputs: names to return, in that order (None: all); inputs: "
           "{name: array} or a sequence in the model's input order. Arrays are NumPy arrays or "
           "anything with __dlpack__ (a CPU torch tensor, either memory format): float32 and "
           "int64 are read without a copy. Returns a list of NumPy arrays.")
      .def("profile", &PySession::profile, "inputs"_a,
           "Runs once and times each node: {'nodes': [{'name', 'op_type', 'ms', 'flops', "
           "'bytes', 'layout_in', 'layout_out', 'implementations'}], 'op_types': [{'op_type', "
           "'nodes', 'ms', 'flops', 'bytes'}] (longest first), 'flops', 'ms'}.")
      .def_prop_ro("inputs", &PySession::inputs,
                   "The model's inputs: ValueInfo(name, shape, dtype); a symbolic dim is its "
                   "name, an unknown one None.")
      .def_prop_ro("outputs", &PySession::outputs, "The model's outputs, as ValueInfo.")
      .def_prop_ro("threads", &PySession::threads,
                   "The threads each call uses (None: refold's default).")
      .def_prop_ro("closed", &PySession::closed, "Whether close() was called.")
      .def("report", &PySession::report,
           "What optimization did, as a dict (refold.OptimizeReport.to_dict()).")
      .def("report_text", &PySession::report_text, "verbose"_a = false,
           "What optimization did, as `refold optimize` prints it.")
      .def("_time_native", &PySession::time_native, "inputs"_a, "runs"_a)
      .def("close", &PySession::close, "Frees the model; any later call raises refold.Error.")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PySession& s, nb::args) { s.close(); });

  m.def("set_num_threads", &refold::set_num_threads, "n"_a,
        "Sets the process-wide kernel thread count (a Session's own threads win).");
  m.def("get_num_threads", &refold::get_num_threads,
        "The process-wide kernel thread count (default: the physical cores, or "
        "REFOLD_NUM_THREADS).");
  m.def("set_flush_denormal", &refold::set_flush_denormal, "flush"_a,
        "Whether runs treat subnormal floats as zero (default True; torch.set_flush_denormal).");
  m.def("get_flush_denormal", &refold::get_flush_denormal,
        "Whether runs treat subnormal floats as zero (default True, or REFOLD_FLUSH_DENORMAL).");

  m.def(
      "_cli",
      [](const std::vector<std::string>& args) {
        std::vector<std::string> argv_storage = {"refold"};
        argv_storage.insert(argv_storage.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (std::string& a : argv_storage) argv.push_back(a.data());
        argv.push_back(nullptr);
        nb::gil_scoped_release release;
        const int code = refold::cli::main(static_cast<int>(argv_storage.size()), argv.data());
        std::fflush(stdout);
        std::fflush(stderr);
        return code;
      },
      "args"_a);
}
