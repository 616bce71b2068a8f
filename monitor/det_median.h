/* det_median.h -- order statistics of the delay matrix's values: the k-th smallest and the lower
 * median, exact (the same value a full sort would give) and without data-dependent branches
 * where the matrix calls them most. */
#ifndef C4_DET_MEDIAN_H
#define C4_DET_MEDIAN_H

/* The k-th smallest (0-based) of v[0..n), 0 <= k < n; reorders v. pick has room for n values
 * (working space). NaN is not an input. */
float det_kth(float *v, int n, int k, float *pick);

/* The lower median of v[0..n): with an even count the smaller middle value, so one hot cell of
 * two makes no effect. 0 for n == 0. Reorders v; pick as for det_kth. */
float det_lower_median(float *v, int n, float *pick);

#endif
