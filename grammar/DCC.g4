// DCC language grammar (ANTLR4). Syntax source of truth:
// shared/reference/dcc-ragged-tensor-design.md plus the decisions in DESIGN-NOTES.md.
// Scalar type names (f32, i32, ...) are plain identifiers here; the checker
// resolves them, so `f32(x)` casts parse as ordinary calls.
grammar DCC;

program : (importDecl | topDecl)* EOF ;

// `import "std/nn.toy";` or `import "std/nn.toy" as nn;`, anywhere at the
// top level, for the whole file (`as` is a plain
// name here, checked by the parser, so it stays usable as an identifier).
// frontend/imports.cpp resolves and merges the files.
importDecl : IMPORT STRING (ID ID)? ';' ;

topDecl
    : typeAlias
    | constDecl
    | fnDecl
    | scheduleDecl
    ;

typeAlias : TYPE ID typeParams? '=' typeExpr ';'? ;
constDecl : CONST ID (':' typeExpr)? '=' expr ';' ;
// A name another module declares, `nn.rmsnorm` (frontend/imports.cpp).
qualName  : ID ('.' ID)? ;
fnDecl    : FN ID typeParams? '(' (param (',' param)* ','?)? ')' ('->'? typeExpr)? whereClause? block ;
// Element-type parameters (frontend/generics.h): `<T: float>`, `<T: f16 | bf16>`,
// `<T>` (= `any`); a constraint is `float`, `int`, `any` and scalar types joined by `|`.
typeParams : '<' typeParam (',' typeParam)* '>' ;
typeParam  : ID (':' ID ('|' ID)*)? ;
// Type arguments of a generic type alias: `Rows<T>`, `Rows<f32>`.
typeArgs   : '<' typeExpr (',' typeExpr)* '>' ;
param     : ID ':' typeExpr ;

// `schedule f { pad_loop(y.i, 4); }`: how to run f's loops, kept apart from
// the algorithm. Each directive is a name and arguments (loop names such as
// `y.i`, factors); ir/schedule.cpp gives them meaning.
scheduleDecl : SCHEDULE ID '{' directive* '}' ;
directive    : ID '(' (expr (',' expr)* ','?)? ')' ';' ;

typeExpr
    : couplingType                      # CouplingTypeExpr
    | dimGroup+ qualName                # TensorTypeExpr
    | LIST '[' typeExpr ']'             # ListTypeExpr
    | AUTO COUPLING                     # AutoCouplingTypeExpr
    | qualName typeArgs?                # NamedTypeExpr
    ;

couplingType : COUPLING '{' (field (',' field)* ','?)? '}' whereClause? layoutClause? ;
field        : ID ':' typeExpr ;
whereClause  : WHERE '{' (expr (',' expr)* ','?)? '}' ;
layoutClause : LAYOUT '(' (ID (',' ID)*)? ')' ;

// One bracket group of a tensor type: `[b: B]` names its index, `[seqlen[b], H, D]` does not.
dimGroup : '[' dim (',' dim)* ']' ;
dim      : (ID ':')? extent ;
extent   : '?' | expr ;

block : '{' stmt* '}' ;

stmt
    : LET ID (':' typeExpr)? ('=' expr)? ';'     # LetStmt
    | expr '=' expr ';'                          # AssignStmt
    | RETURN expr? ';'                           # ReturnStmt
    | expr ';'                                   # ExprStmt
    | ';'                                        # EmptyStmt
    ;

expr
    : expr '.' ID                                        # FieldExpr
    | expr '[' expr (',' expr)* ']'                      # IndexExpr
    | op=('-' | '!' | '+') expr                          # UnaryExpr
    | expr op=('*' | '/' | '%') expr                     # MulExpr
    | expr op=('+' | '-') expr                           # AddExpr
    | expr op=('<' | '<=' | '>' | '>=') expr             # CmpExpr
    | expr op=('==' | '!=') expr                         # EqExpr
    | expr '&&' expr                                     # AndExpr
    | expr '||' expr                                     # OrExpr
    | REDUCE '(' reduceOp ',' expr ')'                   # ReduceExpr
    | qualName typeArgs? '{' (fieldInit (',' fieldInit)* ','?)? '}'      # ConstructExpr
    | qualName '(' (expr (',' expr)* ','?)? ')'          # CallExpr
    | '[' (expr (',' expr)* ','?)? ']'                   # TensorLitExpr
    | '(' expr ')'                                       # ParenExpr
    | INT                                                # IntExpr
    | (FLOAT | INF_LIT | NAN_LIT)                        # FloatExpr
    | (TRUE | FALSE)                                     # BoolExpr
    | ID                                                 # NameExpr
    ;

// Any operator-like token is accepted so that the checker can name a bad one.
reduceOp : '+' | '*' | '-' | '/' | '%' | '&&' | '||' | ID ;

// A field of a construction is either fresh storage (a tensor or coupling
// type) or bound to a value; a plain name is resolved by the checker.
fieldInit : ID ':' (fieldType | expr) ;
fieldType : dimGroup+ qualName | couplingType | LIST '[' typeExpr ']' ;

IMPORT   : 'import' ;
TYPE     : 'type' ;
CONST    : 'const' ;
FN       : 'fn' ;
LET      : 'let' ;
RETURN   : 'return' ;
REDUCE   : 'reduce' ;
COUPLING : 'coupling' ;
WHERE    : 'where' ;
LAYOUT   : 'layout' ;
LIST     : 'list' ;
AUTO     : 'auto' ;
SCHEDULE : 'schedule' ;
TRUE     : 'true' ;
FALSE    : 'false' ;
// Non-finite float literals (docs/language.md): reserved words, like true and false.
INF_LIT  : 'inf' ;
NAN_LIT  : 'nan' ;

ID    : [a-zA-Z_] [a-zA-Z_0-9]* ;
FLOAT : [0-9]+ '.' [0-9]* EXPONENT? | [0-9]+ EXPONENT | '.' [0-9]+ EXPONENT? ;
INT   : [0-9]+ ;
STRING : '"' ~["\r\n]* '"' ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;

LINE_COMMENT  : '//' ~[\r\n]* -> channel(HIDDEN) ;
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN) ;
WS            : [ \t\r\n]+ -> channel(HIDDEN) ;
// Anything else is one bad character, reported by the lexer listener.
BAD_CHAR      : . ;
