// expect: bad/no_func.mlir:3:1: error: the file defines no function
module {}
