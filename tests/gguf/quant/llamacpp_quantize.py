#!/usr/bin/env python3
"""llamacpp_quantize: runs llama.cpp's own llama_model_quantize (the libllama.so that
node-llama-cpp ships, through ctypes) to make a reference file for `anvil quantize`:

    python3 tests/gguf/quant/llamacpp_quantize.py IN.gguf REF.gguf Q4_K_M
    anvil quantize IN.gguf OUT.gguf Q4_K_M   # or quantize_model_ftype() from C
    cmp REF.gguf OUT.gguf                     # byte-identical is the expectation

Re-quantization is allowed (llama-quantize --allow-requantize), no imatrix, 2 threads.
Checked identical: Gemma 3 270M Q4_K_M re-quantized to Q8_0, Q6_K, Q5_K_M, Q3_K_M and Q2_K."""
import ctypes
import glob
import os
import sys

FTYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10,
          "Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16,
          "Q5_K_M": 17, "Q6_K": 18, "BF16": 32, "Q3_K": 12, "Q4_K": 15, "Q5_K": 17}
LIBDIR = os.environ.get("LLAMACPP_LIBDIR",
                        "/tmp/llamacpp-oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64")


class Params(ctypes.Structure):  # llama_model_quantize_params (llama.h of node-llama-cpp 3.21.1)
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int), ("output_tensor_type", ctypes.c_int),
                ("token_embedding_type", ctypes.c_int), ("allow_requantize", ctypes.c_bool),
                ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
                ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("tt_overrides", ctypes.c_void_p),
                ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]


def main():
    if len(sys.argv) != 4 or sys.argv[3].upper() not in FTYPES:
        print(__doc__)
        return 2
    for lib in sorted(glob.glob(os.path.join(LIBDIR, "libggml*.so"))):
        try:
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass  # CPU variants this machine cannot load
    llama = ctypes.CDLL(glob.glob(os.path.join(LIBDIR, "libllama*.so"))[0], mode=ctypes.RTLD_GLOBAL)
    llama.llama_model_quantize_default_params.restype = Params
    llama.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Params)]
    llama.llama_backend_init()
    p = llama.llama_model_quantize_default_params()
    p.ftype = FTYPES[sys.argv[3].upper()]
    p.allow_requantize = True
    p.nthread = 2
    rc = llama.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p))
    print("llama_model_quantize returned", rc)
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
