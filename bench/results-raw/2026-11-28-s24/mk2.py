import sys
src = open('/tmp/ws/kernels.cu').read()
import os
persist = os.environ.get('WS_PERSIST') == '1'
body = open(os.environ.get('WS_BODY', '/tmp/ws/ws_body_p.cu') if persist else '/tmp/ws/ws_body.cu').read()
lines = src.split('\n')
# locate the wgmma body of grouped_gemm_bf16__k0
start = src.index('__global__ void __launch_bounds__(256, 2) grouped_gemm_bf16__k0')
w0 = src.index('#if DCC_WGMMA\n', start + 10)
epi = src.index('  float r_acc0 = 0;', w0)
w1 = src.index('\n#else\n', epi)
ep = src[epi:w1].replace('for (int j = 0; j < 16; ++j) {', 'for (int j = 0; j < WS_TN / 8; ++j) {')
assert ep != src[epi:w1]
pre = src[:w0].replace('n0 = (int64_t)entry[2] * 128;', 'n0 = (int64_t)entry[2] * WS_TN;', 1)
if persist:
    body = body.replace('//EPILOGUE\n', ep.replace('\n', '\n  ').rstrip(' ') + '\n')
    out = pre + body + src[w1:]
    out = out.replace('struct grouped_gemm_bf16__k0__launch {\n  grouped_gemm_bf16__args a;\n  const int32_t* tiles;\n', 'struct grouped_gemm_bf16__k0__launch {\n  grouped_gemm_bf16__args a;\n  const int32_t* tiles;\n  int64_t ntiles;\n', 1)
    old = 'grouped_gemm_bf16__k0<<<(unsigned)ntiles, dcc__cc_major() == 9 ? 256 + WS_PRODUCERS : 256, dsm, strm>>>(lp);'
    new = ('lp.ntiles = ntiles;\n      int nsm = 132, dev = 0;\n      cudaGetDevice(&dev);\n      cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);\n'
           '      const int64_t grid = dcc__cc_major() == 9 ? std::min<int64_t>(ntiles, (int64_t)nsm * WS_MINB) : ntiles;\n'
           '      grouped_gemm_bf16__k0<<<(unsigned)grid, dcc__cc_major() == 9 ? 256 + WS_PRODUCERS : 256, dsm, strm>>>(lp);')
    assert 'HOSTLAUNCH' not in out
    out = out.replace('HOSTLAUNCH', '')
    PERSIST_REPL = (old, new)
else:
    out = pre + body + ep + src[w1:]
    PERSIST_REPL = None
out = out.replace('__global__ void __launch_bounds__(256, 2) grouped_gemm_bf16__k0', '__global__ void __launch_bounds__(256 + WS_PRODUCERS, WS_MINB) grouped_gemm_bf16__k0', 1)
out = out.replace('const int dsm = dcc__cc_major() == 9 ? 99328 : 0;\n      if (dsm > 0 && cudaFuncSetAttribute(grouped_gemm_bf16__k0,',
                  'const int dsm = dcc__cc_major() == 9 ? 1024 + 128 + WS_S * (16384 + 128 * WS_TN) + WS_EPI_BYTES : 0;\n      if (dsm > 0 && cudaFuncSetAttribute(grouped_gemm_bf16__k0,', 1)
out = out.replace('grouped_gemm_bf16__k0<<<(unsigned)ntiles, 256, dsm, strm>>>(lp);', 'grouped_gemm_bf16__k0<<<(unsigned)ntiles, dcc__cc_major() == 9 ? 256 + WS_PRODUCERS : 256, dsm, strm>>>(lp);', 1)
assert out.count('1024 + 128 + WS_S') == 1 and out.count('? 256 + WS_PRODUCERS : 256') == 1

regs = 128
dl = ', '.join('%%%d' % r for r in range(regs))
outs = ', '.join('"+f"(d[%d])' % r for r in range(regs))
fn256 = ('#if WS_TN == 256\ntemplate <>\n__device__ __forceinline__ void dcc_wgmma_ss_bf16<256, 0, 1>(float* d, uint64_t adesc, uint64_t bdesc) {\n'
  '  asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"\n' % regs +
  '               "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%s}, %%%d, %%%d, p, 1, 1, 0, 1;\\n}\\n"\n' % (dl, regs + 1, regs + 2) +
  '               : %s\n               : "r"(1), "l"(adesc), "l"(bdesc));\n}\n#endif\n' % outs)
out = out.replace('struct grouped_gemm_bf16__k0__launch {', fn256 + 'struct grouped_gemm_bf16__k0__launch {', 1)
t = "tn = (((int64_t)((const int32_t*)hp[2])[v_g_3]) + 127) / 128;"
i = out.index('grouped_gemm_bf16__k0__launch lp;')
j = out.rindex(t, 0, i)
out = out[:j] + "tn = (((int64_t)((const int32_t*)hp[2])[v_g_3]) + WS_TN - 1) / WS_TN;" + out[j + len(t):]

if PERSIST_REPL:
    assert out.count(PERSIST_REPL[0]) == 1
    out = out.replace(*PERSIST_REPL)
hdr = '#ifdef WS_SMEM_EPI\n#define WS_EPI_BYTES (2 * 64 * 528)\n#else\n#define WS_EPI_BYTES 0\n#endif\n#ifndef WS_MINB\n#define WS_MINB 2\n#endif\n#ifndef WS_INFLIGHT\n#define WS_INFLIGHT 1\n#endif\n#ifndef WS_PRODUCERS\n#define WS_PRODUCERS 32\n#endif\n#define WS_AU (WS_PRODUCERS / 8)\n#ifndef WS_TN\n#define WS_TN 128\n#endif\n#ifndef WS_S\n#define WS_S 3\n#endif\n#define WS_BU (WS_PRODUCERS / (WS_TN / 8))\n#ifdef WS_NOREG\n#define WS_DEC\n#define WS_INC\n#else\n#define WS_DEC asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\\n" ::"n"(WS_PREG))\n#define WS_INC asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\\n" ::"n"(WS_CREG))\n#endif\n'
out = hdr + out
open('/tmp/ws/ws.cu', 'w').write(out)
