// TEST ONLY: textures are outside what the MSL emulator runs.
#include <metal_stdlib>
using namespace metal;

kernel void blur(texture2d<float, access::read> in [[texture(0)]],
                 device float* out [[buffer(0)]],
                 uint2 gid [[thread_position_in_grid]]) {
  out[gid.x] = in.read(gid).x;
}
