// The ampgan subcommands. Each returns the process exit status: 0 success, 1 failure (an
// ampgan::Error was printed: bad input, bad settings, a failed run), 2 bad usage (an unknown
// option, a missing value, a number that is not a number, wrong arguments), 130 interrupted.
#pragma once

namespace ampgan::cli {

int cmd_train(int argc, char** argv);
int cmd_resume(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_doctor(int argc, char** argv);
int cmd_sample(int argc, char** argv);
int cmd_export_generator(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_devices(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_tensorboard(int argc, char** argv);
int cmd_timelapse(int argc, char** argv);
int cmd_export_onnx(int argc, char** argv);

}  // namespace ampgan::cli
