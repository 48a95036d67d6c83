# Secondary build (node-gyp), used when neither a prebuild nor cmake-js is available.
# Reads the same source list as CMakeLists.txt: native/sources.json.
{
  "variables": {
    "ort_include%": "deps/onnxruntime/include",
    "has_freenect%": "<!(node -e \"const fs=require('fs');process.stdout.write(['/usr/include','/usr/local/include'].some((d)=>fs.existsSync(d+'/libfreenect.h')||fs.existsSync(d+'/libfreenect/libfreenect.h'))?'1':'0')\")"
  },
  "target_defaults": {
    "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
    "cflags_cc": ["-std=c++17", "-fexceptions", "-fvisibility=hidden", "-O3", "-fno-math-errno"],
    "include_dirs": ["native", "<(ort_include)", "<!(node -p \"require('node-addon-api').include_dir\")"],
    "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"]
  },
  "targets": [
    {
      "target_name": "face_check",
      "sources": [
        "<!@(node -p \"const s=require('./native/sources.json'); s.core.concat(s.addon).join(' ')\")"
      ],
      "libraries": ["-ldl", "-lpthread"],
      "conditions": [
        ["target_arch=='x64'", { "dependencies": ["simd_x64"] }],
        ["target_arch=='arm64'", { "sources": ["<!@(node -p \"require('./native/sources.json').simd_neon.join(' ')\")"] }],
        ["has_freenect==1", {
          "sources": ["<!@(node -p \"require('./native/sources.json').optional_freenect.join(' ')\")"],
          "defines": ["FACE_CHECK_HAVE_FREENECT"],
          "include_dirs": ["/usr/include/libfreenect", "/usr/local/include/libfreenect"]
        }]
      ]
    }
  ],
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "simd_x64",
          "type": "static_library",
          "dependencies": ["simd_avx2", "simd_avx512"],
          "sources": []
        },
        {
          "target_name": "simd_avx2",
          "type": "static_library",
          "cflags": ["-mavx2", "-mfma", "-fPIC"],
          "sources": ["<!@(node -p \"require('./native/sources.json').simd_avx2.join(' ')\")"]
        },
        {
          "target_name": "simd_avx512",
          "type": "static_library",
          "cflags": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mfma", "-fPIC"],
          "sources": ["<!@(node -p \"require('./native/sources.json').simd_avx512.join(' ')\")"]
        }
      ]
    }]
  ]
}
