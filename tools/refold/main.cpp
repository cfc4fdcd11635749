// The `refold` executable.
#include "commands.h"

int main(int argc, char** argv) { return refold::cli::main(argc, argv); }
