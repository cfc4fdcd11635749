// Uses the installed headers and library the way a user project would.
#include <cstdio>

#include "refold/refold.h"

int main() {
  refold::Tensor x = refold::ones({1, 2, 3, 3}, refold::MemoryFormat::ChannelsLast);
  if (!x.is_contiguous(refold::MemoryFormat::ChannelsLast)) return 1;
  std::printf("consumer ok %s\n", x.description().c_str());
  return 0;
}
