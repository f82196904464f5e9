// Every operation the importer maps, in the pretty form MLIR prints;
// ops.generic.mlir is the same program in the generic form.  Both must
// import to the same .pir text (tests/stablehlo.sh).
module @ops attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<2x2x3xf32>, %p: tensor<2x3xi1>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2x3xi1>, tensor<4x3xf32>, tensor<2x2x2xf32>, tensor<2x3xi32>) {
    %0 = stablehlo.add %x, %y : tensor<2x3xf32>
    %1 = stablehlo.subtract %0, %y : tensor<2x3xf32>
    %2 = stablehlo.multiply %1, %x : tensor<2x3xf32>
    %3 = stablehlo.divide %2, %y : tensor<2x3xf32>
    %4 = stablehlo.maximum %3, %x : tensor<2x3xf32>
    %5 = stablehlo.minimum %4, %y : tensor<2x3xf32>
    %6 = stablehlo.abs %5 : tensor<2x3xf32>
    %7 = stablehlo.power %6, %y : tensor<2x3xf32>
    %8 = stablehlo.negate %7 : tensor<2x3xf32>
    %9 = stablehlo.exponential %8 : tensor<2x3xf32>
    %10 = stablehlo.log %9 : tensor<2x3xf32>
    %11 = stablehlo.tanh %10 : tensor<2x3xf32>
    %12 = stablehlo.logistic %11 : tensor<2x3xf32>
    %13 = stablehlo.sqrt %12 : tensor<2x3xf32>
    %14 = stablehlo.rsqrt %13 : tensor<2x3xf32>
    %lo = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %hi = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %15 = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %16 = stablehlo.sign %15 : tensor<2x3xf32>
    %17 = stablehlo.compare GT, %14, %16, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %18 = stablehlo.select %17, %14, %16 : tensor<2x3xi1>, tensor<2x3xf32>
    %19 = stablehlo.dot_general %18, %w, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %20 = stablehlo.reduce(%18 init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %21 = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %22 = stablehlo.add %20, %21 : tensor<2xf32>
    %23 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %24 = stablehlo.not %p : tensor<2x3xi1>
    %25 = stablehlo.and %24, %17 : tensor<2x3xi1>
    %26 = stablehlo.or %25, %p : tensor<2x3xi1>
    %27 = stablehlo.xor %26, %17 : tensor<2x3xi1>
    %28 = stablehlo.concatenate %x, %y, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %29 = stablehlo.slice %b [0:2, 0:2:1, 1:3] : (tensor<2x2x3xf32>) -> tensor<2x2x2xf32>
    %30 = stablehlo.dot_general %b, %b, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x2x3xf32>, tensor<2x2x3xf32>) -> tensor<2x2x2xf32>
    %31 = stablehlo.add %29, %30 : tensor<2x2x2xf32>
    %32 = stablehlo.iota dim = 1 : tensor<2x3xi32>
    %33 = stablehlo.convert %x : (tensor<2x3xf32>) -> tensor<2x3xi32>
    %34 = stablehlo.add %32, %33 : tensor<2x3xi32>
    %35 = stablehlo.reshape %34 : (tensor<2x3xi32>) -> tensor<3x2xi32>
    %36 = stablehlo.reshape %35 : (tensor<3x2xi32>) -> tensor<2x3xi32>
    %37 = stablehlo.add %36, %i : tensor<2x3xi32>
    %38 = stablehlo.broadcast_in_dim %22, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %39 = stablehlo.add %38, %x : tensor<2x3xf32>
    %40:2 = call @pair(%39, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
    %41 = stablehlo.add %40#0, %40#1 : tensor<2x3xf32>
    return %41, %19, %22, %23, %27, %28, %31, %37 : tensor<2x3xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2x3xi1>, tensor<4x3xf32>, tensor<2x2x2xf32>, tensor<2x3xi32>
  }
  func.func private @pair(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
    %0 = stablehlo.multiply %a, %b : tensor<2x3xf32>
    return %0, %a : tensor<2x3xf32>, tensor<2x3xf32>
  }
}
